package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/config"
)

// TestFileLogger: the processes of a cluster log at the cluster file's
// log_level unless --log-level is given, which wins.
func TestFileLogger(t *testing.T) {
	cases := []struct {
		name      string
		flag      string // "" leaves --log-level at its default
		file      string
		wantDebug bool
		wantInfo  bool
	}{
		{"file debug", "", "debug", true, true},
		{"file warn", "", "warn", false, false},
		{"file unset", "", "", false, true},
		{"flag wins over the file", "warn", "debug", false, false},
		{"flag debug", "debug", "error", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &cobra.Command{}
			cmd.Flags().String("log-level", "info", "")
			cmd.Flags().String("log-format", "text", "")
			if tc.flag != "" {
				if err := cmd.Flags().Set("log-level", tc.flag); err != nil {
					t.Fatal(err)
				}
			}
			prev := slog.Default()
			defer slog.SetDefault(prev)
			log := fileLogger(cmd, &config.Cluster{LogLevel: tc.file})
			ctx := context.Background()
			if got := log.Enabled(ctx, slog.LevelDebug); got != tc.wantDebug {
				t.Errorf("debug enabled = %v, want %v", got, tc.wantDebug)
			}
			if got := log.Enabled(ctx, slog.LevelInfo); got != tc.wantInfo {
				t.Errorf("info enabled = %v, want %v", got, tc.wantInfo)
			}
		})
	}
}
