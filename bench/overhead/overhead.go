// Package overhead measures what one proxy hop costs: pgbench against a
// managed PostgreSQL directly, through a tandem node (relay), and through
// HAProxy (mode tcp, the reference hop), alternating in one run so that
// the shared machine's noise hits every path alike.
//
// It owns the orchestration of that comparison; it must not change how
// tandem relays (router) or how servers are managed (backend/postgres).
package overhead

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
)

// ErrNoHAProxy means haproxy is not installed (the path is then skipped).
var ErrNoHAProxy = errors.New("haproxy not installed")

// Options of a run.
type Options struct {
	Dir      string        // work directory (data, logs)
	Scale    int           // pgbench -s
	Clients  int           // pgbench -c
	Duration time.Duration // per measurement
	Rounds   int           // alternations
	Tests    []string      // "select-only", "read-write"
	Progress io.Writer
	Logger   *slog.Logger
}

// Point is one measurement.
type Point struct {
	Path      string  `json:"path"`
	Test      string  `json:"test"`
	Round     int     `json:"round"`
	TPS       float64 `json:"tps"`
	LatencyMS float64 `json:"latency_ms"`
}

// Summary is the median per path and test, with the ratio to direct.
type Summary struct {
	Path      string  `json:"path"`
	Test      string  `json:"test"`
	TPS       float64 `json:"tps"`
	LatencyMS float64 `json:"latency_ms"`
	Ratio     float64 `json:"ratio_to_direct"`
}

// Report of a run.
type Report struct {
	Options struct {
		Scale, Clients, Rounds int
		DurationS              float64
	} `json:"options"`
	Points  []Point   `json:"points"`
	Summary []Summary `json:"summary"`
}

// Run performs the comparison.
func Run(ctx context.Context, exe string, o Options) (*Report, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	prog := o.Progress
	if prog == nil {
		prog = io.Discard
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	m, err := postgres.StartManaged(ctx, postgres.ManagedConfig{DataDir: filepath.Join(o.Dir, "pg"), Logger: log, TCP: true, // pgbench and HAProxy reach it directly
		Settings: map[string]string{"max_connections": "100", "synchronous_commit": "on", "shared_buffers": "'256MB'"}})
	if err != nil {
		return nil, err
	}
	defer m.Stop()
	direct := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", m.Port())
	fmt.Fprintf(prog, "overhead: pgbench -i -s %d\n", o.Scale)
	if out, err := exec.CommandContext(ctx, "pgbench", "-i", "-q", "-s", strconv.Itoa(o.Scale), direct).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgbench -i: %w: %s", err, out)
	}

	// A tandem node in front of the server (external back end, trust auth
	// so that only the hop is measured).
	tport, _ := postgres.FreePort()
	cfgText := fmt.Sprintf("cluster = \"overhead\"\nauth = \"trust\"\nrun_dir = %q\nlog_level = \"warn\"\n[[nodes]]\nid = \"n1\"\nlisten = \"127.0.0.1:%d\"\nbackend = \"postgres\"\ndsn = \"postgres://postgres@127.0.0.1:%d/postgres\"\n",
		filepath.Join(o.Dir, "run"), tport, m.Port())
	cfgFile := filepath.Join(o.Dir, "overhead.toml")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o644); err != nil {
		return nil, err
	}
	cfg, err := config.Load(cfgFile)
	if err != nil {
		return nil, err
	}
	lc, err := cluster.Start(ctx, cluster.Options{Config: cfg, Exe: exe, Logger: log, LogLevel: "warn"})
	if err != nil {
		return nil, err
	}
	defer lc.Stop()
	paths := []struct{ name, dsn string }{
		{"direct", direct},
		{"tandem", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", tport)},
	}
	// A second node that reaches the same server over its Unix socket, as a
	// node beside a managed server does.
	uport, _ := postgres.FreePort()
	ucfgText := fmt.Sprintf("cluster = \"overhead-unix\"\nauth = \"trust\"\nrun_dir = %q\nlog_level = \"warn\"\n[[nodes]]\nid = \"n1\"\nlisten = \"127.0.0.1:%d\"\nbackend = \"postgres\"\ndsn = \"host=%s port=%d user=postgres dbname=postgres\"\n",
		filepath.Join(o.Dir, "run-unix"), uport, m.DataDir(), m.Port())
	ucfgFile := filepath.Join(o.Dir, "overhead-unix.toml")
	if err := os.WriteFile(ucfgFile, []byte(ucfgText), 0o644); err != nil {
		return nil, err
	}
	ucfg, err := config.Load(ucfgFile)
	if err != nil {
		return nil, err
	}
	ulc, err := cluster.Start(ctx, cluster.Options{Config: ucfg, Exe: exe, Logger: log, LogLevel: "warn"})
	if err != nil {
		return nil, err
	}
	defer ulc.Stop()
	paths = append(paths, struct{ name, dsn string }{"tandem-unix", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", uport)})
	if hp, err := exec.LookPath("haproxy"); err == nil {
		hport, _ := postgres.FreePort()
		hcfg := filepath.Join(o.Dir, "haproxy.cfg")
		os.WriteFile(hcfg, []byte(fmt.Sprintf("global\n  maxconn 1000\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 1h\n  timeout server 1h\nlisten pg\n  bind 127.0.0.1:%d\n  server pg1 127.0.0.1:%d\n", hport, m.Port())), 0o644)
		hc := exec.Command(hp, "-db", "-f", hcfg)
		hc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		hlog, _ := os.Create(filepath.Join(o.Dir, "haproxy.log"))
		hc.Stdout, hc.Stderr = hlog, hlog
		if err := hc.Start(); err != nil {
			return nil, fmt.Errorf("start haproxy: %w", err)
		}
		defer func() { hc.Process.Kill(); hc.Wait() }()
		time.Sleep(300 * time.Millisecond)
		paths = append(paths, struct{ name, dsn string }{"haproxy", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", hport)})
	} else {
		fmt.Fprintln(prog, "overhead: haproxy not installed (apt-get install haproxy): skipping that path")
	}

	rep := &Report{}
	rep.Options.Scale, rep.Options.Clients, rep.Options.Rounds, rep.Options.DurationS = o.Scale, o.Clients, o.Rounds, o.Duration.Seconds()
	tpsRe := regexp.MustCompile(`tps = ([0-9.]+) \(without initial`)
	latRe := regexp.MustCompile(`latency average = ([0-9.]+) ms`)
	for round := 1; round <= o.Rounds; round++ {
		for _, test := range o.Tests {
			// Rotate the order each round so no path always goes first.
			for i := range paths {
				p := paths[(i+round)%len(paths)]
				args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(o.Clients), "-j", "2", "-T", strconv.Itoa(int(o.Duration.Seconds()))}
				if test == "select-only" {
					args = append(args, "-S")
				}
				args = append(args, p.dsn)
				out, err := exec.CommandContext(ctx, "pgbench", args...).CombinedOutput()
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
				if err != nil {
					return nil, fmt.Errorf("pgbench via %s: %w: %s", p.name, err, out)
				}
				pt := Point{Path: p.name, Test: test, Round: round}
				if mm := tpsRe.FindSubmatch(out); mm != nil {
					pt.TPS, _ = strconv.ParseFloat(string(mm[1]), 64)
				}
				if mm := latRe.FindSubmatch(out); mm != nil {
					pt.LatencyMS, _ = strconv.ParseFloat(string(mm[1]), 64)
				}
				rep.Points = append(rep.Points, pt)
				fmt.Fprintf(prog, "overhead: round %d/%d %-11s %-8s %10.0f tps %7.3f ms\n", round, o.Rounds, test, p.name, pt.TPS, pt.LatencyMS)
			}
		}
	}
	for _, test := range o.Tests {
		var base float64
		for _, p := range paths {
			var tps, lat []float64
			for _, pt := range rep.Points {
				if pt.Path == p.name && pt.Test == test {
					tps, lat = append(tps, pt.TPS), append(lat, pt.LatencyMS)
				}
			}
			s := Summary{Path: p.name, Test: test, TPS: median(tps), LatencyMS: median(lat)}
			if p.name == "direct" {
				base = s.TPS
			}
			if base > 0 {
				s.Ratio = s.TPS / base
			}
			rep.Summary = append(rep.Summary, s)
		}
	}
	return rep, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Print writes the summary table.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "pgbench, scale %d, %d clients, prepared, %.0f s per point, %d rounds alternating; medians\n\n", r.Options.Scale, r.Options.Clients, r.Options.DurationS, r.Options.Rounds)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "test\tpath\ttps\tlatency ms\tratio to direct\t")
	for _, s := range r.Summary {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.3f\t%.2f\t\n", s.Test, s.Path, s.TPS, s.LatencyMS, s.Ratio)
	}
	tw.Flush()
}
