package physical

import (
	"strings"
	"testing"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/secure"
)

// TestRouterDirectDoor: what router.direct opens on a managed server. With
// certificates: cert authentication from anywhere, mapped from the
// router's name to each user's role (quoted where pg_ident.conf needs it)
// and to nothing else; without: SCRAM from loopback only; without
// router.direct: nothing but the replication role's lines.
func TestRouterDirectDoor(t *testing.T) {
	base := func(direct bool) *config.Cluster {
		c := &config.Cluster{Name: "c", Nodes: []config.Node{{ID: "n1", Repl: "127.0.0.1:7001"}, {ID: "n2", Repl: "127.0.0.1:7002"}},
			Users: []config.User{{Name: "app"}, {Name: "Mixed Case"}}}
		c.Router = &config.Router{Listen: "127.0.0.1:7000", Direct: &direct}
		c.Design, c.Repl.Engine = "hot-standby", config.EnginePhysical
		return c
	}
	ident := &secure.Identity{}
	for _, tc := range []struct {
		name          string
		direct, certs bool
		hba, notHBA   []string
		ident         []string
	}{
		{"off", false, true, []string{"hostssl replication tandem_repl 127.0.0.1/32 scram-sha-256"}, []string{"cert map", "host all all"}, nil},
		{"mtls", true, true, []string{"hostssl all all 0.0.0.0/0 cert map=tandem_router", "hostssl all all ::/0 cert map=tandem_router"}, []string{"scram-sha-256\nhost all"},
			[]string{"tandem_router router app\n", "tandem_router router \"Mixed Case\"\n"}},
		{"cleartext", true, false, []string{"host all all 127.0.0.0/8 scram-sha-256", "host all all ::1/128 scram-sha-256"}, []string{"cert", "0.0.0.0/0"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{c: base(tc.direct), cfg: Config{ID: "n1"}}
			if tc.certs {
				e.cfg.Ident = ident
			}
			hba := e.hba()
			for _, w := range tc.hba {
				if !strings.Contains(hba, w) {
					t.Errorf("pg_hba.conf lacks %q:\n%s", w, hba)
				}
			}
			for _, w := range tc.notHBA {
				if strings.Contains(hba, w) {
					t.Errorf("pg_hba.conf has %q:\n%s", w, hba)
				}
			}
			got := e.ident()
			if strings.Count(got, "\n") != len(tc.ident) {
				t.Errorf("pg_ident.conf maps %d roles, want %d:\n%s", strings.Count(got, "\n"), len(tc.ident), got)
			}
			for _, w := range tc.ident {
				if !strings.Contains(got, w) {
					t.Errorf("pg_ident.conf lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, ReplicationRole) || strings.Contains(got, "postgres") {
				t.Errorf("pg_ident.conf maps the router to a server role:\n%s", got)
			}
		})
	}
	// The derived passwords differ per role and per cluster and follow
	// the token.
	a, b := RouterPassword("tok", "c", "app"), RouterPassword("tok", "c", "app2")
	if a == b || a != RouterPassword("tok", "c", "app") || a == RouterPassword("tok2", "c", "app") || a == RouterPassword("tok", "d", "app") || len(a) != 64 {
		t.Errorf("RouterPassword: %s %s", a, b)
	}
}
