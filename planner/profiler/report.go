package profiler

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tandemdb/tandem/planner"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode profile report: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write profile report: %w", err)
	}
	return nil
}

// PrintTable writes the measured figures per phase, the profile's parameters
// with their trust notes, the mix check and the warnings.
func (r *Report) PrintTable(w io.Writer) error {
	var b strings.Builder
	p := r.Profile
	fmt.Fprintf(&b, "profile %s: workload %s, mix %s, %d %s, %d clients, on %s (PostgreSQL %s)\n",
		p.Name, p.Workload, p.Mix, r.Scale, r.ScaleName, r.Clients, r.Target, r.ServerVersion)
	fmt.Fprintf(&b, "server: postmaster pid %d (%s), data dir %s\n", r.PID, r.PIDFrom, orUnknown(r.DataDir))
	fmt.Fprintf(&b, "disk: %s (%s); CPU demand divided by %g CPUs (%s)\n\n", strings.Join(r.Disks, "+"), r.DisksFrom, r.CPUs, r.CPUsFrom)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tseconds\tcompletions\tper s\tserver CPU s\tCPU ms/c\tdisk busy s\tdisk ms/c\tdevice KiB/c\tserver/device IO\tdriver CPU\tother CPU\thost CPU\t")
	for _, ph := range r.Phases {
		share := "-"
		if s := ph.IOShare(); !math.IsNaN(s) && ph.ServerIOUnread == 0 {
			share = fmt.Sprintf("%.2fx", s)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%.1f\t%.2f\t%.4f\t%.3f\t%.4f\t%.2f\t%s\t%s\t%s\t%s\t\n",
			ph.Name, ph.WallS, ph.Completions, safeDiv(float64(ph.Completions), ph.WallS),
			ph.ServerCPUS, 1000*ph.CPUPerCompletion(), ph.DiskBusyS, 1000*ph.DiskPerCompletion(),
			safeDiv(float64(ph.DeviceReadBytes+ph.DeviceWriteBytes), float64(ph.Completions))/1024, share,
			pct(ph.ClientCPUS, ph.HostCapacityS), pct(ph.OtherCPUS(), ph.HostCapacityS), pct(ph.HostBusyS, ph.HostCapacityS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("(/c = per completion; CPU ms/c is raw CPU time, before dividing by CPUs; server/device IO is the server tree's /proc/PID/io bytes over the disk's: well below 1x means others' I/O; the last three are shares of the host's CPU capacity)\n")
	for _, ph := range r.Phases {
		fmt.Fprintf(&b, "  %s: completions are %s", ph.Name, ph.What)
		switch {
		case ph.Name == PhaseApply:
			fmt.Fprintf(&b, "; %d of %d captured writesets, %d rows", ph.Writesets, ph.CapturedTotal, ph.WritesetRows)
		case ph.Started > 0:
			fmt.Fprintf(&b, "; started %d, committed %d, rolled back %d, aborted %d, errors %d", ph.Started, ph.Committed, ph.RolledBack, ph.Aborted, ph.Errors)
		}
		b.WriteString("\n")
	}

	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARAMETER\tVALUE\tTRUST")
	row := func(key, val string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", key, val, p.Trust[key]) }
	row("pr", fmt.Sprintf("%.4f", p.Pr))
	row("pw", fmt.Sprintf("%.4f", p.Pw))
	row("a1", fmt.Sprintf("%.6f", p.A1))
	row("l1_s", fmt.Sprintf("%.6f", p.L1))
	for _, res := range p.Resources {
		for _, f := range []struct {
			name string
			v    float64
		}{{"rc_s", res.RC}, {"wc_s", res.WC}, {"ws_s", res.WS}} {
			row("resources."+res.Name+"."+f.name, fmt.Sprintf("%.7f", f.v))
		}
	}
	for _, res := range p.Resources {
		if res.BG > 0 || res.BGReplica > 0 {
			row("resources."+res.Name+".bg", fmt.Sprintf("%.4f", res.BG))
			row("resources."+res.Name+".bg_replica", fmt.Sprintf("%.4f", res.BGReplica))
		}
	}
	if p.WritesetsPerUpdate > 0 {
		row("writesets_per_update", fmt.Sprintf("%.4f", p.WritesetsPerUpdate))
	}
	if p.ConflictRate > 0 {
		row("conflict_rate", fmt.Sprintf("%.6f", p.ConflictRate))
	}
	if p.CertifierDelay > 0 {
		row("certifier_delay_s", fmt.Sprintf("%.6f", p.CertifierDelay))
	}
	row("think_time_s", fmt.Sprintf("%g", p.ThinkTime))
	row("clients_per_replica", fmt.Sprintf("%d", p.ClientsPerReplica))
	if err := tw.Flush(); err != nil {
		return err
	}
	if bg := r.Background; bg != nil {
		fmt.Fprintf(&b, "\nbackground (idle phase, no transaction): the server's tree %.4f cores, the replica's %.4f cores; every other phase's CPU is net of it (its raw CPU is server CPU s + background_cpu_s in the JSON)\n", bg.ServerCores, bg.ReplicaCores)
	}
	if mix := r.lastPhase(PhaseMix); mix != nil && mix.CgroupPeriods > 0 {
		share := r.quotaShare(mix)
		verdict := "not saturated: the models give a node all of its CPU"
		if c, ok := r.HostCapacity(mix); ok {
			verdict = fmt.Sprintf("saturated: capacity %.3f, the models give a node that less its background", c)
		}
		fmt.Fprintf(&b, "\nhost (mix phase): its CPU quota held it back in %d of %d scheduler periods and it ran %.3f of the quota; %s\n", mix.CgroupThrottled, mix.CgroupPeriods, share, verdict)
	}
	if len(r.Check) > 0 {
		b.WriteString("\ncheck: busy time of the mix phase against reads×rc + update attempts×wc from the separate phases\n")
		for _, c := range r.Check {
			fmt.Fprintf(&b, "  %-5s measured %.3f s, predicted %.3f s (%+.1f%%); wc implied by the mix phase %.7f s, profile wc %.7f s\n",
				c.Resource, c.MeasuredS, c.PredictS, 100*c.Error, c.WCFromMix, r.wc(c.Resource))
		}
	}
	if sp := r.Split; sp != nil && sp.MultiMaster {
		fmt.Fprintf(&b, "\nsplit of the mix phase between the profiled node (every read, rc %.7f s) and the replica (the profiled node's writesets):\n", sp.RC)
		fmt.Fprintf(&b, "  profiled node: busy %.3f s, %.0f reads, wc from the mix %.7f s per update attempt (update phase: %.7f s)\n", sp.PrimaryBusyS, sp.ReadsPrimary, sp.WC, r.wc(ResCPU))
		fmt.Fprintf(&b, "  replica: busy %.3f s, ws from the mix %.7f s per committed update at %.1f writesets per batch (update phase: %.7f s at %.1f)\n", sp.ReplicaBusyS, sp.WS, sp.ApplyBatch, r.ws(ResCPU), r.Profile.ApplyBatch)
	} else if sp != nil {
		fmt.Fprintf(&b, "\nsplit of the mix phase by the reads the router sent each node (rc %.7f s):\n", sp.RC)
		fmt.Fprintf(&b, "  primary: busy %.3f s, %.0f reads, wc from the mix %.7f s per update attempt (update phase: %.7f s)\n", sp.PrimaryBusyS, sp.ReadsPrimary, sp.WC, r.wc(ResCPU))
		fmt.Fprintf(&b, "  replica: busy %.3f s, %.0f reads, ws from the mix %.7f s per committed update (update phase: %.7f s)\n", sp.ReplicaBusyS, sp.ReadsReplica, sp.WS, r.ws(ResCPU))
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, w := range slices.Compact(slices.Clone(r.Warnings)) {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) wc(resource string) float64 {
	for _, res := range r.Profile.Resources {
		if res.Name == resource {
			return res.WC
		}
	}
	return 0
}

func (r *Report) ws(resource string) float64 {
	for _, res := range r.Profile.Resources {
		if res.Name == resource {
			return res.WS
		}
	}
	return 0
}

// ReplicatedMixDemands returns the replicated path's profile with the
// CPU's wc and ws taken from the mix phase split between the nodes
// (Report.Split) instead of the update phase, and whether it had a split
// to take them from. The update phase's wc stays as WCSat (updates
// alone), the WAL sender's share (wsend) the update phase's. Disk
// demands stay the phases': the nodes share one disk.
func (r *Report) ReplicatedMixDemands() (planner.Profile, bool) {
	p := r.Profile
	if r.Split == nil {
		return p, false
	}
	p.Resources = append([]planner.Resource(nil), r.Profile.Resources...)
	update, mix := r.lastPhase(PhaseUpdate), r.lastPhase(PhaseMix)
	// The update phase's demand per attempt (what the profile's WC was
	// before the split replaced it): the master running updates alone.
	sat := 0.0
	if update != nil && update.Completions > 0 && r.CPUs > 0 {
		sat = update.ServerCPUS / r.CPUs / float64(update.Completions)
	}
	for i := range p.Resources {
		if p.Resources[i].Name != ResCPU {
			continue
		}
		p.Resources[i].WC = r.Split.WC
		if r.Split.MultiMaster {
			// The update's own work, which the conflict window charges
			// (planner/DESIGN.md "The conflict window of a measured
			// profile"); ws at the mix's batch size: the per-batch apply
			// cost scales from there (Profile.WSAt, WSPerBatch).
			p.Resources[i].WCSat = sat
			if r.Split.WS > 0 {
				p.Resources[i].WS = r.Split.WS
				if r.Split.ApplyBatch >= 1 {
					p.ApplyBatch = r.Split.ApplyBatch
				}
			}
			return p, true
		}
		p.Resources[i].WS = r.Split.WS
		if sat > 0 && mix != nil && mix.UpdateStarted > 0 {
			p.Resources[i].WCSat = sat
			p.MasterReadShare = r.Split.ReadsPrimary / (r.Split.ReadsPrimary + float64(mix.UpdateStarted))
		}
		if p.Resources[i].WSend > p.Resources[i].WC {
			p.Resources[i].WSend = p.Resources[i].WC
		}
		return p, true
	}
	return r.Profile, false
}

// lastPhase is the report's last phase called name (nil: none).
func (r *Report) lastPhase(name string) *Phase {
	for i := len(r.Phases) - 1; i >= 0; i-- {
		if r.Phases[i].Name == name {
			return r.Phases[i]
		}
	}
	return nil
}

func pct(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*a/b)
}

// MixDemands returns the profile with each resource's update demand wc
// taken from the mix phase (MixCheck.WCFromMix: the mix's measured busy
// time less its reads at rc, per update attempt) instead of the update
// phase, and whether any was replaced. Seed 003 measures wc in a phase of
// updates only; where an update costs a node more inside the mix (fewer
// commits share a WAL flush and a wake-up) the phase demands do not add
// up to the mix, and these do by construction. Resources without a mix
// phase figure keep the phase's wc.
func (r *Report) MixDemands() (planner.Profile, bool) {
	p := r.Profile
	p.Resources = append([]planner.Resource(nil), r.Profile.Resources...)
	changed := false
	for i := range p.Resources {
		for _, c := range r.Check {
			if c.Resource == p.Resources[i].Name && c.WCFromMix > 0 {
				p.Resources[i].WC = c.WCFromMix
				changed = true
			}
		}
	}
	return p, changed
}
