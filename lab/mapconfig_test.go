package lab

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/config"
)

const mapBase = `cluster = "m"
design = "single-master"
[[users]]
name = "u"
password = "p"
[router]
listen = "127.0.0.1:6000"
[[nodes]]
id = "n1"
listen = "127.0.0.1:6001" # the front door
metrics = '127.0.0.1:6002'
repl_listen = "127.0.0.1:6003"
[[nodes]]
id = "n2"
listen = "localhost:6011"
metrics = "127.0.0.1:6012"
repl_listen = "127.0.0.1:6013"
`

// The mapped file moves node i's addresses to 10.213.K.(11+i), keeps the
// router's, replaces [lab], and parses as a cluster whose addresses all
// count as on this machine.
func TestMapText(t *testing.T) {
	addr := func(i int) string { return "10.213.7." + strconv.Itoa(i) }
	spec := config.Lab{CPUPerNode: 0.25, NetDelay: config.Duration{Duration: 2e6}}
	for _, tc := range []struct {
		name, text string
		want       []string // substrings of the result
		err        error
	}{
		{"plain", mapBase, []string{`listen = "10.213.7.11:6001" # the front door`, `metrics = '10.213.7.11:6002'`, `repl_listen = "10.213.7.12:6013"`, `listen = "10.213.7.12:6011"`, `listen = "127.0.0.1:6000"`, "net_delay = \"2ms\"", "netns = true"}, nil},
		{"lab replaced", mapBase + "[lab]\ncpu_per_node = 0.5 # old\n[[nodes.x]]\n", []string{"cpu_per_node = 0.25", "[[nodes.x]]"}, nil},
		{"not loopback", strings.Replace(mapBase, "127.0.0.1:6012", "192.0.2.1:6012", 1), nil, ErrNotMappable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.text
			if tc.name == "lab replaced" {
				in = strings.Replace(tc.text, "[[nodes.x]]\n", "", 1)
			}
			c, err := config.Parse("m.toml", []byte(in))
			if err != nil {
				t.Fatal(err)
			}
			out, err := mapText(tc.text, c, addr, spec)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "nodes[1].metrics") {
					t.Fatalf("got %v, want %v naming nodes[1].metrics", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("mapped file lacks %q:\n%s", w, out)
				}
			}
			if strings.Count(out, "[lab]") != 1 || strings.Contains(out, "cpu_per_node = 0.5") {
				t.Errorf("the old [lab] section survived:\n%s", out)
			}
			if tc.name != "plain" {
				return
			}
			mc, err := config.Parse("mapped.toml", []byte(out))
			if err != nil {
				t.Fatalf("the mapped file does not parse: %v\n%s", err, out)
			}
			if mc.Nodes[1].Repl != "10.213.7.12:6013" || !mc.AllLoopback() || mc.Lab == nil || mc.Lab.CPUPerNode != 0.25 {
				t.Errorf("mapped cluster: nodes[1].repl_listen %s, all on this machine %v, lab %+v", mc.Nodes[1].Repl, mc.AllLoopback(), mc.Lab)
			}
		})
	}
}
