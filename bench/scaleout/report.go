package scaleout

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// WriteTable prints the medians: one line per mix and N.
func (r *Report) WriteTable(w io.Writer) error {
	what := r.Design + " on " + r.Backend
	if r.Engine != "" {
		what += " (" + r.Engine + " engine)"
	}
	if r.ReadConsistency != "" {
		what += ", read consistency " + r.ReadConsistency
	}
	fmt.Fprintf(w, "scale-out of %s, workload %s (scale %d), lab %s: EMULATED hosts on one machine\n", what, r.Workload, r.Scale, r.Lab)
	alone := "N = 1 is a standalone node"
	if r.Design == "multi-master" {
		alone += " at REPEATABLE READ (snapshot isolation, as every multi-master node)"
	}
	switch r.Alone {
	case AloneRouted:
		alone = "N = 1 is the primary alone behind the router (--alone router)"
	case AloneSocket:
		alone = "N = 1 is the server's own socket (--alone socket)"
	}
	fmt.Fprintf(w, "ramp-up %s, measured %s per run; medians over rounds; %s; CPU in cores used (of the quota)\n\n", r.Rampup, r.Duration, alone)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mix\tN\tclients\tX (tx/s)\tefficiency\tmean ms\tp90 ms\tnode CPU\tbusiest node\trouter CPU\tclient CPU\tmachine busy\trounds\t")
	for _, row := range r.Rows {
		eff := "-"
		if row.Efficiency > 0 {
			eff = strconv.FormatFloat(row.Efficiency, 'f', 2, 64)
		}
		router := "-"
		if row.N > 1 || r.Alone == AloneRouted {
			router = fmt.Sprintf("%.2f", row.RouterUtil)
		}
		mem := "-"
		if row.MemLatencyNS > 0 {
			mem = fmt.Sprintf("%.0f", row.MemLatencyNS)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%s\t%d\t\n", row.Mix, row.N, row.Clients, row.X, eff, row.MeanMs, row.P90Ms, row.NodeUtil, row.MaxNodeUtil, router, row.ClientUtil, row.MachineBusy, mem, row.Rounds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "machine busy: cores the whole machine used (every process's CPU time); at the machine's core count the emulated hosts wait for each other and are not independent")
	fmt.Fprintln(w, "memory ns: the machine's memory latency over the windows (a probe's dependent loads); on a virtual machine the host's other guests move it, and a transaction's CPU cost with it, by up to 2x without stolen time")
	return nil
}

// WriteJSON writes the whole report.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteCSV writes the medians, one row per mix and N.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"design", "backend", "workload", "lab", "mix", "n", "clients", "x", "efficiency", "mean_ms", "p90_ms", "node_util", "max_node_util", "router_util", "client_util", "machine_busy", "mem_latency_ns", "rounds"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, row := range r.Rows {
		_ = cw.Write([]string{r.Design, r.Backend, r.Workload, r.Lab, row.Mix, strconv.Itoa(row.N), strconv.Itoa(row.Clients), f(row.X), f(row.Efficiency),
			f(row.MeanMs), f(row.P90Ms), f(row.NodeUtil), f(row.MaxNodeUtil), f(row.RouterUtil), f(row.ClientUtil), f(row.MachineBusy), f(row.MemLatencyNS), strconv.Itoa(row.Rounds)})
	}
	cw.Flush()
	return cw.Error()
}
