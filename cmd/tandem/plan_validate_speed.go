package main

import (
	"slices"

	"github.com/tandemdb/tandem/bench/scaleout"
	"github.com/tandemdb/tandem/planner/profiler"
)

// The machine's memory speed in `tandem plan validate`. On a virtual
// machine the host's other guests move a transaction's CPU cost by up to
// 2x within minutes without stolen time (lab/speed.go): a standalone
// node's CPU per TM1 read rose with the probe's latency (correlation
// 0.86-0.93), but not by a fixed rule, so the validation does not correct
// for it. It says how far apart the profiles and the windows were, so a
// reader can tell a model's error from a machine that changed speed
// (docs/benchmarks.md, "The machine's memory speed, and the nodes' background").

// speedRange is the spread of memory latencies of a set of measurements.
type speedRange struct {
	N      int     `json:"n"`
	Min    float64 `json:"min_ns"`
	Median float64 `json:"median_ns"`
	Max    float64 `json:"max_ns"`
}

// speedSummary is the validation's account of the machine's speed.
type speedSummary struct {
	// Profiles are every profile phase's latencies (every round's),
	// Windows the sweep's windows'.
	Profiles speedRange `json:"profiles"`
	Windows  speedRange `json:"windows"`
	// Ratio is Windows.Median over Profiles.Median (0 when either is
	// unmeasured).
	Ratio float64 `json:"ratio"`
}

// speedDrift is how far apart the profiles' and the windows' median
// latencies may be before the report warns.
const speedDrift = 0.10

func newSpeedRange(vs []float64) speedRange {
	if len(vs) == 0 {
		return speedRange{}
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	med := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return speedRange{N: len(vs), Min: vs[0], Median: med, Max: vs[len(vs)-1]}
}

// summariseSpeed gathers the latencies of every profile phase (of every
// round when they interleaved, else of the one round's profiles) and of
// every sweep window; nil when nothing was measured.
func summariseSpeed(rounds []profileRound, standalone, replicated []*profiler.Report, so *scaleout.Report) *speedSummary {
	var reps []*profiler.Report
	if len(rounds) > 0 {
		for _, r := range rounds {
			reps = append(append(reps, r.Standalone...), r.Replicated...)
		}
	} else {
		reps = append(append(reps, standalone...), replicated...)
	}
	var prof, win []float64
	for _, rep := range reps {
		for _, ph := range rep.Phases {
			if ph.MemLatencyNS > 0 {
				prof = append(prof, ph.MemLatencyNS)
			}
		}
	}
	if so != nil {
		for _, p := range so.Points {
			if p.MemLatencyNS > 0 {
				win = append(win, p.MemLatencyNS)
			}
		}
	}
	if len(prof) == 0 && len(win) == 0 {
		return nil
	}
	s := &speedSummary{Profiles: newSpeedRange(prof), Windows: newSpeedRange(win)}
	if s.Profiles.Median > 0 && s.Windows.Median > 0 {
		s.Ratio = float64(int64(s.Windows.Median/s.Profiles.Median*1000+0.5)) / 1000
	}
	return s
}

// warning is a sentence for the report when the medians are more than
// speedDrift apart.
func (s *speedSummary) warning() string {
	if s.Ratio == 0 || (s.Ratio >= 1-speedDrift && s.Ratio <= 1+speedDrift) {
		return ""
	}
	return "; WARNING: more than 10 % apart: the machine ran at another speed during the sweep than during the profiles, and a transaction's CPU cost moves with it (on this kind of machine by up to 2x), so the errors above mix the model's with the machine's"
}
