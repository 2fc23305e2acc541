// Command tandem turns several ordinary databases into one highly available,
// scalable virtual database spoken to over the PostgreSQL wire protocol.
//
// The wiring below reads straight down: one root command, one constructor
// per subcommand, each in its own file.
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/tandemdb/tandem/config"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/lab"
	"github.com/tandemdb/tandem/node"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	// The lab's user-space links run as a child process of this same
	// executable (package lab); it never returns from here.
	lab.MaybeLinksHelper()
	root := &cobra.Command{
		Use:           "tandem",
		Short:         "Replication middleware: one highly available, scalable virtual database over the PostgreSQL wire protocol",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.PersistentFlags().String("log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().String("log-format", "text", "log format: text or json")
	root.PersistentFlags().StringVar(&runDirFlag, "run-dir", "", "override the cluster file's run_dir (data, logs, certificates); give every command on that cluster the same one")
	var cpuProfile string
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this command's own process to `FILE` (go tool pprof; e.g. of a bench driver)")
	var profFile *os.File
	cobra.OnInitialize(func() {
		if cpuProfile == "" {
			return
		}
		f, err := os.Create(cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "tandem: --cpuprofile:", err)
			os.Exit(2)
		}
		profFile = f
	})

	benchCmd := newBenchCmd()
	benchCmd.AddCommand(newOverheadCmd(), newSweepCmd(), newBenchFailoverCmd(), newScaleoutCmd())

	root.AddCommand(
		newUpCmd(),
		newDownCmd(),
		newNodeCmd(),
		newRouterCmd(),
		newWitnessCmd(),
		newStatusCmd(),
		newPromoteCmd(),
		newSwitchoverCmd(),
		newSetCmd(),
		newDrainCmd(true),
		newDrainCmd(false),
		newCertsCmd(),
		newPasswdCmd(),
		benchCmd,
		newPlanCmd(),
		newDemoCmd(),
	)

	// Every socket is a descriptor: serve up to the hard limit.
	if _, err := node.RaiseFileLimit(); err != nil {
		fmt.Fprintln(os.Stderr, "tandem: cannot read the open-file limit:", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := root.ExecuteContext(ctx)
	stop()
	if profFile != nil {
		pprof.StopCPUProfile()
		_ = profFile.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tandem:", err)
		var ee exitCoder
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		os.Exit(1)
	}
}

type exitCoder interface{ ExitCode() int }

// logger builds the structured logger from the persistent flags.
func logger(cmd *cobra.Command) *slog.Logger {
	lvl, _ := cmd.Flags().GetString("log-level")
	return loggerAt(cmd, lvl)
}

// fileLogger is logger at the cluster file's log_level, unless
// --log-level was given: for the commands that run a cluster's processes.
func fileLogger(cmd *cobra.Command, c *config.Cluster) *slog.Logger {
	if !cmd.Flags().Changed("log-level") && c.LogLevel != "" {
		return loggerAt(cmd, c.LogLevel)
	}
	return logger(cmd)
}

func loggerAt(cmd *cobra.Command, lvl string) *slog.Logger {
	format, _ := cmd.Flags().GetString("log-format")
	var level slog.Level
	if err := level.UnmarshalText([]byte(lvl)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if format == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	l := slog.New(h)
	slog.SetDefault(l)
	return l
}
