package profiler

import (
	"fmt"
	"math"
	"strings"
)

// trust writes the profile's per-field notes: where each number comes from
// and what may distort it.
func (p *profiler) trust(read, update, apply, mixPh, a1src *Phase) map[string]string {
	o := p.opts
	t := map[string]string{}
	var readW, sumW float64
	var readTypes []string
	for i, tx := range p.cls.txs {
		sumW += p.cls.weights[i]
		if tx.ReadOnly && p.cls.weights[i] > 0 {
			readW += p.cls.weights[i]
			readTypes = append(readTypes, tx.Name)
		}
	}
	mixNote := ""
	if mixPh != nil && mixPh.Started > 0 {
		mixNote = fmt.Sprintf("; measured share of started transactions in the mix phase: pr %.4f, pw %.4f",
			float64(mixPh.ReadStarted)/float64(mixPh.Started), float64(mixPh.UpdateStarted)/float64(mixPh.Started))
	}
	t["pr"] = fmt.Sprintf("exact: the mix's weights, %g of %g on read-only types (%s)%s", readW, sumW, orNone(readTypes), mixNote)
	t["pw"] = fmt.Sprintf("exact: the mix's weights, %g of %g on update types%s", sumW-readW, sumW, mixNote)

	switch {
	case p.cls.pw == 0:
		t["a1"] = "exact: the mix has no update transactions"
		t["l1_s"] = "exact: the mix has no update transactions"
	case a1src != nil:
		where := "the mix phase"
		caveat := ""
		if a1src == update {
			where = "the update phase (--skip-mix)"
			caveat = "; updates only, so more concurrent updates than under the mix: an over-estimate of A_1 and L(1)"
		}
		bound := ""
		if a1src.UpdateAborted == 0 && a1src.UpdateStarted > 0 {
			bound = fmt.Sprintf("; none observed, so A_1 < %.2g with 95%% confidence (3/n)", 3/float64(a1src.UpdateStarted))
		}
		t["a1"] = fmt.Sprintf("measured in %s: %d aborted (SQLSTATE class 40) of %d started update transactions, %d clients, %.1f s%s%s",
			where, a1src.UpdateAborted, a1src.UpdateStarted, o.Clients, a1src.WallS, bound, caveat)
		t["l1_s"] = fmt.Sprintf("measured in %s: mean response time of %d committed update transactions as the driver saw them (round trips and driver scheduling included; the driver used %.0f%% of the host's CPU)%s",
			where, a1src.UpdateCommitted, 100*safeDiv(a1src.ClientCPUS, a1src.HostCapacityS), caveat)
	}
	switch {
	case apply != nil && apply.CaptureUpdates > 0:
		t["writesets_per_update"] = fmt.Sprintf("measured in the capture run: %d writesets captured of %d update transactions run to their end (the rest rolled back by the workload's rules or changed no row: no writeset to certify or apply)", apply.CapturedTotal, apply.CaptureUpdates)
	case apply != nil && update != nil && update.UpdateStarted-update.UpdateAborted > 0:
		t["writesets_per_update"] = fmt.Sprintf("measured in the update phase: %d committed of %d update transactions not aborted (the rest rolled back by the workload's rules: no writeset to certify or apply)", update.UpdateCommitted, update.UpdateStarted-update.UpdateAborted)
	}
	if n := abortsIn(mixPh, update); n > 0 {
		t["conflict_rate"] = fmt.Sprintf("measured over the mix and update phases pooled: %d aborted update attempts against their exposure (each phase's committed updates per second x their mean response time); about ±%.0f %% (1σ) from the count alone", n, 100/math.Sqrt(float64(n)))
	}
	if update != nil && update.Certifications > 0 {
		t["certifier_delay_s"] = fmt.Sprintf("measured in the update phase: mean of the profiled node's %d certification round trips (its /status; tandem_mm_certifier_round_trip_seconds), under the phase's load", update.Certifications)
	}
	t["think_time_s"] = fmt.Sprintf("the profiling run's think time (--think %s), not the deployment's: set Z with plan predict --think", o.Think)
	t["clients_per_replica"] = fmt.Sprintf("the profiling run's client count (--clients %d), not the deployment's: set C with plan predict --clients-per-replica", o.Clients)

	for _, c := range []struct {
		field string
		ph    *Phase
		need  bool
		none  string
	}{
		{"rc_s", read, p.cls.pr > 0, "exact: the mix has no read-only transactions"},
		{"wc_s", update, p.cls.pw > 0, "exact: the mix has no update transactions"},
		{"ws_s", apply, p.cls.pw > 0, "exact: the mix has no update transactions, so no writesets"},
	} {
		if !c.need || c.ph == nil {
			t["resources.cpu."+c.field] = c.none
			t["resources.disk."+c.field] = c.none
			continue
		}
		t["resources.cpu."+c.field] = p.cpuNote(c.ph)
		t["resources.disk."+c.field] = p.diskNote(c.ph)
	}
	if bg := p.bg; bg != nil {
		t["resources.cpu.bg"] = fmt.Sprintf("measured in the idle phase (%s, no transaction): the server's tree used %.4f cores of %g, subtracted from every later phase's CPU before its demand", o.Idle, bg.ServerCores, p.rep.CPUs)
		if o.ReplicaPID > 0 {
			t["resources.cpu.bg_replica"] = fmt.Sprintf("measured in the idle phase: the replica's tree (pid %d) used %.4f cores of %g, subtracted from its CPU in every later phase", o.ReplicaPID, bg.ReplicaCores, p.rep.CPUs)
		}
	}
	return t
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// denominator describes a phase's completions.
func (p *profiler) denominator(ph *Phase) string {
	s := fmt.Sprintf("%d %s in %.1f s", ph.Completions, ph.What, ph.WallS)
	if ph.Name == PhaseApply && p.opts.ReplicaPID > 0 {
		s += "; the replica applied them through its own apply path while the update phase ran (and until it was idle after it)"
	} else if ph.Name == PhaseApply {
		s += fmt.Sprintf(" (%d rows; %d captured) by %d parallel connections; writesets captured by triggers in a separate run, undone, then applied with writeset.Statements (upsert/delete by primary key)",
			ph.WritesetRows, ph.CapturedTotal, p.opts.ApplyClients)
	}
	return s
}

func (p *profiler) cpuNote(ph *Phase) string {
	var b strings.Builder
	what, pid := "the postmaster", p.rep.PID
	if ph.Name == PhaseApply && p.opts.ReplicaPID > 0 {
		what, pid = "the replica", p.opts.ReplicaPID
	}
	if ph.ReadsOnReplica {
		what = fmt.Sprintf("the profiled node and the replica (pid %d; reads were balanced over both)", p.opts.ReplicaPID)
	}
	fmt.Fprintf(&b, "measured: %.2f CPU-s of %s (pid %d) and its descendants (up to %d processes), /proc/PID/stat utime+stime plus cutime+cstime of exited backends",
		ph.ServerCPUS, what, pid, ph.ServerProcs)
	if ph.ServerCPUS > 0 {
		fmt.Fprintf(&b, "; 10 ms ticks: at worst ±%.1f%% (processes × 10 ms)", 100*float64(ph.ServerProcs)*0.01/ph.ServerCPUS)
	}
	fmt.Fprintf(&b, "; divided by %s", p.denominator(ph))
	if p.rep.CPUs != 1 {
		fmt.Fprintf(&b, "; and by %g CPUs (%s: the planner's one CPU queue stands for all of them; raw %.4f ms CPU per completion)", p.rep.CPUs, p.rep.CPUsFrom, 1000*ph.CPUPerCompletion())
	}
	b.WriteString(autovacNote(ph))
	if ph.HostCapacityS > 0 {
		fmt.Fprintf(&b, "; host CPU: server %.0f%%, this driver %.0f%%, other processes %.0f%%, stolen by the hypervisor %.0f%% of %d CPUs",
			100*ph.ServerCPUS/ph.HostCapacityS, 100*ph.ClientCPUS/ph.HostCapacityS, 100*ph.OtherCPUS()/ph.HostCapacityS, 100*ph.HostStealS/ph.HostCapacityS, p.rep.HostCPUs)
		if (ph.HostBusyS+ph.HostStealS)/ph.HostCapacityS > 0.9 {
			b.WriteString(" (saturated: CPU contention inflates per-transaction CPU, e.g. spinning and cache misses, and the driver may have been the limit)")
		} else if ph.OtherCPUS()/ph.HostCapacityS > 0.1 {
			b.WriteString(" (other processes competed for the CPUs)")
		}
	}
	return b.String()
}

func (p *profiler) diskNote(ph *Phase) string {
	var b strings.Builder
	if ph.Name == PhaseApply && p.opts.ReplicaPID > 0 {
		fmt.Fprintf(&b, "measured: the update phase's busy time of %s (%s) times the replica tree's share of the two trees' /proc/PID/io bytes (%s of the replica), %.3f s; divided by %s; the emulated hosts share one disk",
			strings.Join(p.rep.Disks, "+"), p.rep.DisksFrom, humanBytes(ph.ReplicaIOBytes), ph.DiskBusyS, p.denominator(ph))
		return b.String()
	}
	fmt.Fprintf(&b, "measured: %.3f s busy (\"time spent doing I/Os\") of %s in /proc/diskstats (%s); divided by %s",
		ph.DiskBusyS, strings.Join(p.rep.Disks, "+"), p.rep.DisksFrom, p.denominator(ph))
	b.WriteString(autovacNote(ph))
	share := ph.IOShare()
	switch {
	case ph.DiskBusyS == 0 && ph.DeviceReadBytes+ph.DeviceWriteBytes == 0:
		b.WriteString("; the device did no I/O: the phase ran from memory")
	case math.IsNaN(share):
	case ph.ServerIOUnread > 0:
		b.WriteString("; no per-process cross-check (/proc/PID/io unreadable): other processes' I/O on the device may be included")
	case share < 0.8:
		fmt.Fprintf(&b, "; cross-check: the server tree's /proc/PID/io accounts for only %.0f%% of the %s the device moved: a shared device, the busy time includes other processes' I/O", 100*share, humanBytes(ph.DeviceReadBytes+ph.DeviceWriteBytes))
	default:
		fmt.Fprintf(&b, "; cross-check: the server tree's /proc/PID/io accounts for at least the %s the device moved (%.1fx; it counts page-cache pages as they are dirtied, whole folios on recent kernels, so it may exceed the device's bytes): no sign of other processes' I/O", humanBytes(ph.DeviceReadBytes+ph.DeviceWriteBytes), share)
	}
	b.WriteString("; busy time is wall time with at least one request in flight, so parallel requests on an SSD or virtual disk count once, and dirty pages written back after the phase by later checkpoints are not included")
	return b.String()
}

func autovacNote(ph *Phase) string {
	if ph.AutovacuumSamples == 0 {
		return ""
	}
	return fmt.Sprintf("; autovacuum workers ran in %d of %d samples taken every 200 ms: their work is included", ph.AutovacuumSamples, ph.Samples)
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// abortsIn counts the aborted update attempts of the phases (nil: none).
func abortsIn(phases ...*Phase) int64 {
	var n int64
	for _, ph := range phases {
		if ph != nil {
			n += ph.UpdateAborted
		}
	}
	return n
}
