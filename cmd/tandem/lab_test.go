package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/config"
)

// --lab against the cluster file's [lab]: absent keeps the file's, "off"
// drops it, a value overrides field by field, a bad value names the field.
func TestLabSpec(t *testing.T) {
	file := &config.Cluster{Lab: &config.Lab{CPUPerNode: 0.5, CPUClient: 1}}
	for _, tc := range []struct {
		name string
		c    *config.Cluster
		flag *string // nil: --lab not given
		want string  // Lab.String(), "nil", or an error's text
	}{
		{"no flag, file lab", file, nil, "cpu=0.5,client=1"},
		{"no flag, no file", nil, nil, "nil"},
		{"no flag, file without lab", &config.Cluster{}, nil, "nil"},
		{"off", file, ptrTo("off"), "nil"},
		{"override", file, ptrTo("cpu=0.25"), "cpu=0.25,client=1"},
		{"on", &config.Cluster{}, ptrTo("on"), "on"},
		{"bad", file, ptrTo("cpu=9999"), "field lab.cpu_per_node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &cobra.Command{}
			var v string
			cmd.Flags().StringVar(&v, "lab", "", "")
			if tc.flag != nil {
				if err := cmd.Flags().Set("lab", *tc.flag); err != nil {
					t.Fatal(err)
				}
			}
			got, err := labSpec(cmd, tc.c, v)
			switch {
			case err != nil:
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want %q", err, tc.want)
				}
			case got == nil:
				if tc.want != "nil" {
					t.Errorf("no lab, want %s", tc.want)
				}
			case got.String() != tc.want:
				t.Errorf("lab %s, want %s", got.String(), tc.want)
			}
		})
	}
}

func ptrTo(s string) *string { return &s }
