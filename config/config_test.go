package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const good = `
cluster = "c"
[[users]]
name = "u"
password = "p"
[[nodes]]
id = "n1"
listen = "127.0.0.1:7001"
`

// Secrets: references resolve, verifiers stay, clear text is noted.
func TestSecrets(t *testing.T) {
	t.Setenv("TANDEM_TEST_PW", "from-env")
	f := t.TempDir() + "/pw"
	if err := os.WriteFile(f, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := good + "[[users]]\nname = \"e\"\npassword = \"env:TANDEM_TEST_PW\"\n[[users]]\nname = \"f\"\npassword = \"file:" + f + "\"\n[[users]]\nname = \"v\"\npassword = \"SCRAM-SHA-256$4096:c2FsdA==$a:b\"\n"
	c, err := Parse("s.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]string{"u": "p", "e": "from-env", "f": "from-file", "v": "SCRAM-SHA-256$4096:c2FsdA==$a:b"} {
		if got, _ := c.Password(user); got != want {
			t.Errorf("user %s: password %q, want %q", user, got, want)
		}
	}
	if strings.Join(c.ClearTextPasswords, ",") != "u" {
		t.Errorf("clear-text passwords %v, want [u]", c.ClearTextPasswords)
	}
	if c.AdminURL("127.0.0.1:9000", "/status") != "http://127.0.0.1:9000/status" || c.AdminURL("10.0.0.5:9000", "/status") != "https://10.0.0.5:9000/status" {
		t.Errorf("admin URLs: %s, %s", c.AdminURL("127.0.0.1:9000", "/status"), c.AdminURL("10.0.0.5:9000", "/status"))
	}
	if c.Security.InterNode != "mtls" || !strings.HasSuffix(c.Security.CertDir, ".tandem/c/certs") || !strings.HasPrefix(c.Security.AdminToken, "file:") {
		t.Errorf("security defaults: %+v", c.Security)
	}
}

func TestGoodConfigDefaults(t *testing.T) {
	c, err := Parse("good.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Design != "standalone" || c.Auth != "scram-sha-256" || c.Nodes[0].Backend != "sqlite" || c.Nodes[0].SQLite.ReadPool != 4 {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if !strings.HasSuffix(c.Nodes[0].DataDir, ".tandem/c/n1") {
		t.Fatalf("data dir %q", c.Nodes[0].DataDir)
	}
}

// mm is a three-node multi-master cluster file (two nodes when pair is
// not empty), with more settings of the first node.
func mm(nodeExtra, pair string) string {
	s := "cluster = \"c\"\ndesign = \"multi-master\"\nauth = \"trust\"\n"
	n := 3
	if pair != "" {
		n = 2
	}
	for i := 1; i <= n; i++ {
		s += fmt.Sprintf("[[nodes]]\nid = \"n%d\"\nlisten = \"127.0.0.1:710%d\"\nmetrics = \"127.0.0.1:720%d\"\nraft_listen = \"127.0.0.1:810%d\"\n", i, i, i, i)
		if i == 1 {
			s += nodeExtra + "\n"
		}
	}
	return s
}

// TestMultiMasterConfig: a three-node multi-master file is accepted with
// its defaults.
func TestMultiMasterConfig(t *testing.T) {
	c, err := Parse("mm.toml", []byte(mm("", "")))
	if err != nil {
		t.Fatal(err)
	}
	if !c.MultiMaster() || c.Replicated() || !c.Coordinated() {
		t.Fatalf("multi-master %v, replicated %v, coordinated %v", c.MultiMaster(), c.Replicated(), c.Coordinated())
	}
	if c.MM.ApplyConflictWait.Duration != time.Second || c.MM.CertifyTimeout.Duration != 30*time.Second {
		t.Fatalf("defaults: %+v", c.MM)
	}
	if len(c.Voters()) != 3 {
		t.Fatalf("voters %v", c.Voters())
	}
	if c.MM.ApplyBatchDelay.Duration != 0 {
		t.Fatalf("apply_batch_delay defaults to %s, want 0", c.MM.ApplyBatchDelay.Duration)
	}
	d, err := Parse("mm.toml", []byte(mm("", "")+"[multi_master]\napply_batch_delay = \"25ms\"\n"))
	if err != nil || d.MM.ApplyBatchDelay.Duration != 25*time.Millisecond {
		t.Fatalf("apply_batch_delay = \"25ms\": %v, %v", d, err)
	}
	// Sequences interleave over the nodes by default: node i draws i+1
	// modulo the number of nodes.
	for i, want := range [][2]int{{3, 1}, {3, 2}, {3, 0}} {
		if k, r := c.SequenceStride(c.Nodes[i].ID); k != want[0] || r != want[1] {
			t.Errorf("%s: sequence stride %d offset %d, want %v", c.Nodes[i].ID, k, r, want)
		}
	}
	for text, want := range map[string][2]int{"sequence_stride = 8": {8, 3}, "sequence_stride = 1": {1, 0}} {
		d, err := Parse("mm.toml", []byte(mm("", "")+"[multi_master]\n"+text+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if k, r := d.SequenceStride(d.Nodes[2].ID); k != want[0] || r != want[1] {
			t.Errorf("%s: n3 stride %d offset %d, want %v", text, k, r, want)
		}
	}
	// PostgreSQL back ends run it on the writeset engine (the default).
	pg := strings.ReplaceAll(mm("", ""), "raft_listen", "backend = \"postgres\"\nraft_listen")
	if c, err = Parse("mm.toml", []byte(pg)); err != nil {
		t.Fatal(err)
	}
	if c.Nodes[1].Backend != "postgres" || c.Repl.Engine != EngineWriteset {
		t.Fatalf("backend %q, engine %q", c.Nodes[1].Backend, c.Repl.Engine)
	}
}

// Each mistake produces one clear message naming the file and the field.
func TestBadConfigs(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"syntax", "cluster = ", "bad.toml:1"},
		{"unknown field", good + "\n[[nodes]]\nid = \"n2\"\nlisten=\"127.0.0.1:7002\"\nbakend = \"sqlite\"\n", `unknown field "nodes.bakend"`},
		{"no name", strings.Replace(good, `cluster = "c"`, "", 1), "field cluster: missing"},
		{"bad design", good + "design = \"triple\"\n", ""},
		{"design not built", strings.Replace(good, `cluster = "c"`, "cluster = \"c\"\ndesign = \"raidb-1\"", 1), `field design: "raidb-1" is not available`},
		{"multi-master alone", strings.Replace(good, `cluster = "c"`, "cluster = \"c\"\ndesign = \"multi-master\"", 1), `field nodes: design multi-master takes 2 to 16 nodes, found 1`},
		{"multi-master on physical", mm("backend = \"postgres\"\n[replication]\nengine = \"physical\"", ""), `field replication.engine: "physical" cannot run multi-master`},
		{"multi-master on mysql", mm("backend = \"mysql\"", ""), `backend`},
		{"multi-master without raft", strings.Replace(mm("", ""), `raft_listen = "127.0.0.1:8102"`, "", 1), `field nodes[1].raft_listen: missing: multi-master certifies`},
		{"multi-master pair without witness", mm("", "x"), `field witness: missing: two multi-master nodes`},
		{"multi-master negative window", mm("", "") + "[multi_master]\nwindow_writesets = -1\n", `field multi_master.window_writesets`},
		{"multi-master batch delay too long", mm("", "") + "[multi_master]\napply_batch_delay = \"2s\"\n", `field multi_master.apply_batch_delay: 2s: must be between 0`},
		{"multi-master sequence stride below the nodes", mm("", "") + "[multi_master]\nsequence_stride = 2\n", `field multi_master.sequence_stride: 2: must be at least the number of nodes (3)`},
		{"bad design name", strings.Replace(good, `cluster = "c"`, "cluster = \"c\"\ndesign = \"triple\"", 1), `field design: "triple" is not a design`},
		{"bad auth", strings.Replace(good, `cluster = "c"`, "cluster = \"c\"\nauth = \"ldap\"", 1), `field auth: "ldap"`},
		{"no users", "cluster = \"c\"\n[[nodes]]\nid = \"n1\"\nlisten = \"127.0.0.1:7001\"\n", "field users: no users"},
		{"no password", strings.Replace(good, "password = \"p\"", "", 1), "field users[0].password: missing"},
		{"no nodes", "cluster = \"c\"\n[[users]]\nname=\"u\"\npassword=\"p\"\n", "field nodes: no nodes"},
		{"no listen", strings.Replace(good, `listen = "127.0.0.1:7001"`, "", 1), "field nodes[0].listen: missing"},
		{"bad listen", strings.Replace(good, `127.0.0.1:7001`, "localhost", 1), `field nodes[0].listen: "localhost" is not host:port`},
		{"bad backend", good + "backend = \"oracle\"\n", `field nodes[0].backend: "oracle" is not a back end`},
		{"sqlite with dsn", good + "dsn = \"postgres://x@y/z\"\n", "field nodes[0].dsn: a sqlite node has no dsn"},
		{"bad synchronous", good + "[nodes.sqlite]\nsynchronous = \"sometimes\"\n", `field nodes[0].sqlite.synchronous: "sometimes"`},
		{"bad duration", good + "[nodes.sqlite]\nbusy_timeout = \"soon\"\n", `"soon" is not a duration`},
		{"two standalone nodes", good + "[[nodes]]\nid = \"n2\"\nlisten = \"127.0.0.1:7002\"\n", "design standalone takes exactly 1 node"},
		{"port clash", good + "metrics = \"127.0.0.1:7001\"\n", "field nodes[0].metrics: address 127.0.0.1:7001 is already used by nodes[0].listen"},
		{"bad log level", strings.Replace(good, `cluster = "c"`, "cluster = \"c\"\nlog_level = \"loud\"", 1), `field log_level: "loud"`},
		{"bad inter_node", good + "[security]\ninter_node = \"ssh\"\n", `field security.inter_node: "ssh"`},
		{"clear text between hosts", strings.Replace(good, "127.0.0.1:7001", "10.0.0.1:7001", 1) + "[security]\ninter_node = \"none\"\n", "field security.inter_node: \"none\" sends"},
		{"trust off loopback", strings.Replace(strings.Replace(good, "127.0.0.1:7001", "0.0.0.0:7001", 1), `cluster = "c"`, "cluster = \"c\"\nauth = \"trust\"", 1), "field auth: \"trust\" lets anyone"},
		{"verifier with md5", strings.Replace(strings.Replace(good, `password = "p"`, `password = "SCRAM-SHA-256$4096:c2FsdA==$a:b"`, 1), `cluster = "c"`, "cluster = \"c\"\nauth = \"md5\"", 1), "field users[0].password: a SCRAM-SHA-256 verifier cannot check md5"},
		{"unset env secret", strings.Replace(good, `password = "p"`, `password = "env:TANDEM_TEST_SURELY_UNSET"`, 1), "field users[0].password: secret reference cannot be resolved: environment variable TANDEM_TEST_SURELY_UNSET is not set"},
		{"missing file secret", strings.Replace(good, `password = "p"`, `password = "file:/nonexistent/tandem-pw"`, 1), "field users[0].password: secret reference cannot be resolved"},
		{"bad admin_https", good + "[security]\nadmin_https = \"maybe\"\n", `field security.admin_https: "maybe"`},
		{"admin_https without TLS", good + "[security]\nadmin_https = \"on\"\ninter_node = \"none\"\n", "field security.admin_https"},
		{"postgres user not superuser", strings.Replace(good, `name = "u"`, `name = "postgres"`, 1) + "backend = \"postgres\"\n", "field users[0].superuser: the user \"postgres\" is the managed PostgreSQL's bootstrap superuser"},
		{"tiny message cap", good + "[limits]\nmax_message_bytes = 10\n", "field limits.max_message_bytes"},
		{"bad read_consistency", good + "[router]\nlisten = \"127.0.0.1:7100\"\nread_consistency = \"psychic\"\n", `field router.read_consistency: "psychic" is not one of session, strong, bounded, eventual`},
		{"split without replicas", good + "[router]\nlisten = \"127.0.0.1:7100\"\nsplit = true\n", `field router.split: routes reads to replicas, which design "standalone" has none of`},
		{"bad read_only_functions", good + "[router]\nlisten = \"127.0.0.1:7100\"\nread_only_functions = [\"f()\"]\n", "field router.read_only_functions[0]"},
		{"negative read_wait", good + "[router]\nlisten = \"127.0.0.1:7100\"\nread_wait = \"-1s\"\n", "field router.read_wait: must not be negative"},
		{"unix socket path too long", good + "[router]\nlisten = \"127.0.0.1:7100\"\nunix_socket_dir = \"/tmp/" + strings.Repeat("d", 100) + "\"\n", "field router.unix_socket_dir: the socket /tmp/ddd"},
		{"unix socket shared", good + "[router]\nlisten = \"127.0.0.1:7100\"\nread_listen = \"127.0.0.2:7100\"\nunix_socket_dir = \"/tmp/t\"\n", "field router.unix_socket_dir: socket /tmp/t/.s.PGSQL.7100 is already router.unix_socket_dir's"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.toml", []byte(c.text))
			if err == nil {
				t.Fatal("accepted a bad configuration")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("not ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), "bad.toml") {
				t.Fatalf("message does not name the file: %v", err)
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("message %q does not contain %q", err, c.want)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("one message expected, got several lines: %q", err)
			}
		})
	}
}

const pair = `
cluster = "c"
design = "hot-standby"
[[users]]
name = "u"
password = "p"
[[nodes]]
id = "n1"
listen = "127.0.0.1:7001"
repl_listen = "127.0.0.1:7101"
metrics = "127.0.0.1:7201"
raft_listen = "127.0.0.1:7301"
[[nodes]]
id = "n2"
listen = "127.0.0.1:7002"
repl_listen = "127.0.0.1:7102"
metrics = "127.0.0.1:7202"
raft_listen = "127.0.0.1:7302"
`

const witness = "[witness]\nid = \"w\"\nraft_listen = \"127.0.0.1:7300\"\n"

// The coordinator's fields: a pair with a witness has three voters,
// failover defaults to manual, and the lease to 1 s with half as grace.
func TestCoordinatorConfig(t *testing.T) {
	c, err := Parse("pair.toml", []byte(pair+witness+"[replication]\nfailover = \"automatic\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	vs := c.Voters()
	if len(vs) != 3 || vs[0].ID != "n1" || vs[1].RaftListen != "127.0.0.1:7302" || !vs[2].Witness || vs[2].ID != "w" {
		t.Fatalf("voters %+v", vs)
	}
	if !c.Coordinated() || c.Repl.Failover != "automatic" || c.Repl.Lease.Duration != time.Second || c.Repl.LeaseGrace.Duration != 500*time.Millisecond {
		t.Fatalf("replication %+v", c.Repl)
	}
	if !strings.HasSuffix(c.Witness.DataDir, ".tandem/c/w") {
		t.Fatalf("witness data dir %q", c.Witness.DataDir)
	}
	c, err = Parse("plain.toml", []byte(strings.ReplaceAll(pair, "raft_listen", "# raft_listen")))
	if err != nil {
		t.Fatal(err)
	}
	if c.Coordinated() || c.Repl.Failover != "manual" {
		t.Fatalf("a pair without raft addresses runs the coordinator: %+v", c.Repl)
	}
	// Five nodes and no witness: all five vote; four nodes: three do.
	five := pair
	for i := 3; i <= 5; i++ {
		five += fmt.Sprintf("[[nodes]]\nid = \"n%d\"\nlisten = \"127.0.0.1:70%02d\"\nrepl_listen = \"127.0.0.1:71%02d\"\nmetrics = \"127.0.0.1:72%02d\"\nraft_listen = \"127.0.0.1:73%02d\"\n", i, i, i, i, i)
		c, err := Parse("many.toml", []byte(five))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{3: 3, 4: 3, 5: 5}[i]; len(c.Voters()) != want {
			t.Fatalf("%d nodes: %d voters, want %d", i, len(c.Voters()), want)
		}
	}
}

func TestBadCoordinatorConfigs(t *testing.T) {
	noRaft := strings.ReplaceAll(pair, "raft_listen", "# raft_listen")
	cases := []struct{ name, text, want string }{
		{"bad failover", pair + witness + "[replication]\nfailover = \"sometimes\"\n", `field replication.failover: "sometimes"`},
		{"automatic without raft", noRaft + "[replication]\nfailover = \"automatic\"\n", `field replication.failover: "automatic" needs the coordinator`},
		{"one node without raft", strings.Replace(pair, "raft_listen = \"127.0.0.1:7302\"", "", 1) + witness, "field nodes[1].raft_listen: missing"},
		{"pair without witness", pair, "field witness: missing"},
		{"witness without id", pair + "[witness]\nraft_listen = \"127.0.0.1:7300\"\n", "field witness.id: missing"},
		{"witness named like a node", pair + "[witness]\nid = \"n2\"\nraft_listen = \"127.0.0.1:7300\"\n", `field witness.id: "n2" is already`},
		{"witness named router", pair + "[witness]\nid = \"router\"\nraft_listen = \"127.0.0.1:7300\"\n", `field witness.id: "router"`},
		{"witness without address", pair + "[witness]\nid = \"w\"\n", "field witness.raft_listen: missing"},
		{"witness port clash", pair + "[witness]\nid = \"w\"\nraft_listen = \"127.0.0.1:7301\"\n", "field witness.raft_listen: address 127.0.0.1:7301 is already used by nodes[0].raft_listen"},
		{"raft port clash", strings.Replace(pair, "raft_listen = \"127.0.0.1:7302\"", "raft_listen = \"127.0.0.1:7102\"", 1) + witness, "field nodes[1].raft_listen: address 127.0.0.1:7102 is already used"},
		{"raft without TLS", pair + witness + "[security]\ninter_node = \"none\"\n", "field security.inter_node: the coordinator's Raft traffic needs mutual TLS"},
		{"raft in standalone", good + "raft_listen = \"127.0.0.1:7301\"\n", "the coordinator runs in replicated designs"},
		{"short lease", pair + witness + "[replication]\nlease = \"10ms\"\n", "field replication.lease: 10ms is too short"},
		{"negative grace", pair + witness + "[replication]\nlease_grace = \"-1s\"\n", "field replication.lease_grace"},
		{"witness unknown field", pair + witness + "dir = \"x\"\n", `unknown field "witness.dir"`},
		{"wildcard raft address", strings.Replace(pair, "raft_listen = \"127.0.0.1:7302\"", "raft_listen = \"0.0.0.0:7302\"", 1) + witness + "[security]\nallow_insecure = true\n", "field nodes[1].raft_listen: \"0.0.0.0:7302\": the other voters dial"},
		{"witness without host", pair + "[witness]\nid = \"w\"\nraft_listen = \":7300\"\n", "field witness.raft_listen: \":7300\""},
		{"witness metrics clash", pair + witness + "metrics = \"127.0.0.1:7201\"\n", "field witness.metrics: address 127.0.0.1:7201 is already used by nodes[0].metrics"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.toml", []byte(c.text))
			if err == nil {
				t.Fatal("accepted a bad configuration")
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "bad.toml") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("message %q does not contain %q", err, c.want)
			}
		})
	}
}

// Timeouts read PostgreSQL's forms (milliseconds, units) and Go's, and the
// back end picks idle_in_transaction_session_timeout's default.
func TestLimitsTimeouts(t *testing.T) {
	cases := []struct {
		name, limits       string
		idleTx             time.Duration // on SQLite
		idleTxPG, idle, rd time.Duration
		kaIdle             time.Duration
		kaCount            int
	}{
		{"defaults", "", 60 * time.Second, 0, 0, 60 * time.Second, 0, 0},
		{"integers are ms", "idle_in_transaction_session_timeout = 1500\nidle_session_timeout = 250\n", 1500 * time.Millisecond, 1500 * time.Millisecond, 250 * time.Millisecond, 60 * time.Second, 0, 0},
		{"units", "idle_in_transaction_session_timeout = \"5s\"\nidle_session_timeout = \"1min\"\nmessage_read_timeout = \"100ms\"\ntcp_keepalives_idle = 30\ntcp_keepalives_count = 4\n", 5 * time.Second, 5 * time.Second, time.Minute, 100 * time.Millisecond, 30 * time.Second, 4},
		{"go form", "idle_session_timeout = \"1m30s\"\ntcp_keepalives_idle = \"2min\"\n", 60 * time.Second, 0, 90 * time.Second, 60 * time.Second, 2 * time.Minute, 0},
		{"zero turns off", "idle_in_transaction_session_timeout = 0\nmessage_read_timeout = \"0\"\n", 0, 0, 0, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := Parse("t.toml", []byte(good+"[limits]\n"+c.limits))
			if err != nil {
				t.Fatal(err)
			}
			l := cl.Limits
			if got := l.IdleInTransaction("sqlite"); got != c.idleTx {
				t.Errorf("idle in transaction (sqlite) %v, want %v", got, c.idleTx)
			}
			if got := l.IdleInTransaction("postgres"); got != c.idleTxPG {
				t.Errorf("idle in transaction (postgres) %v, want %v", got, c.idleTxPG)
			}
			if l.IdleSessionTimeout.Duration != c.idle || l.MessageRead() != c.rd || l.TCPKeepalivesIdle.Duration != c.kaIdle || l.TCPKeepalivesCount != c.kaCount {
				t.Errorf("idle %v read %v keepalive idle %v count %d", l.IdleSessionTimeout, l.MessageRead(), l.TCPKeepalivesIdle, l.TCPKeepalivesCount)
			}
		})
	}
	bad := []struct{ name, limits, want string }{
		{"word", "idle_session_timeout = \"soon\"\n", "idle_session_timeout"},
		{"negative", "idle_in_transaction_session_timeout = -5\n", "idle_in_transaction_session_timeout"},
		{"bad unit", "idle_in_transaction_session_timeout = \"5 parsecs\"\n", "idle_in_transaction_session_timeout"},
		{"tiny read deadline", "message_read_timeout = \"1ms\"\n", "field limits.message_read_timeout"},
		{"sub-second keepalive", "tcp_keepalives_interval = \"10ms\"\n", "field limits.tcp_keepalives_interval"},
		{"bad keepalive", "tcp_keepalives_idle = \"often\"\n", "field limits.tcp_keepalives_idle"},
		{"keepalive count", "tcp_keepalives_count = 1000\n", "field limits.tcp_keepalives_count"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.toml", []byte(good+"[limits]\n"+c.limits))
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInvalid naming %q", err, c.want)
			}
		})
	}
}

// single-master: N from 2 to 16 nodes on the replication core, the router's
// policy and max_lag, and per-node weights, each mistake named by field.
func TestSingleMasterConfig(t *testing.T) {
	nodes := func(n int) string {
		s := "cluster = \"c\"\ndesign = \"single-master\"\n[[users]]\nname = \"u\"\npassword = \"p\"\n"
		for i := 1; i <= n; i++ {
			s += fmt.Sprintf("[[nodes]]\nid = \"n%d\"\nlisten = \"127.0.0.1:70%02d\"\nrepl_listen = \"127.0.0.1:71%02d\"\nmetrics = \"127.0.0.1:72%02d\"\nraft_listen = \"127.0.0.1:73%02d\"\n", i, i, i, i, i)
		}
		return s
	}
	router := "[router]\nlisten = \"127.0.0.1:6000\"\n"
	c, err := Parse("sm.toml", []byte(nodes(3)+router))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Replicated() || c.Router.Policy != "least-connected" || c.Router.MaxLag.GSNs != DefaultMaxLagGSNs || c.Nodes[0].BalanceWeight() != 1 || c.Nodes[0].ReadBalanceWeight() != 1 {
		t.Fatalf("defaults: replicated %v router %+v", c.Replicated(), c.Router)
	}
	if len(c.Voters()) != 3 || len(c.NonVoters()) != 0 {
		t.Fatalf("3 nodes: voters %v non-voters %v", c.Voters(), c.NonVoters())
	}
	c, err = Parse("sm.toml", []byte(nodes(7)+router+"policy = \"source\"\nmax_lag = \"2s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Voters()) != 5 || len(c.NonVoters()) != 2 || c.NonVoters()[0].ID != "n6" || c.Router.MaxLag.Time != 2*time.Second || c.Router.Policy != "source" {
		t.Fatalf("7 nodes: voters %v non-voters %v router %+v", c.Voters(), c.NonVoters(), c.Router)
	}
	c, err = Parse("sm.toml", []byte(nodes(2)+"weight = 3\nread_weight = 0\n"+witness+router))
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes[1].BalanceWeight() != 3 || c.Nodes[1].ReadBalanceWeight() != 0 || c.Nodes[0].ReadBalanceWeight() != 1 {
		t.Fatalf("weights %+v", c.Nodes)
	}
	if c, err = Parse("sm.toml", []byte(nodes(16)+router)); err != nil || len(c.Nodes) != 16 {
		t.Fatalf("16 nodes: %v", err)
	}
	// A primary alone: the physical engine on 1-safe commits only.
	alone := nodes(1) + "backend = \"postgres\"\n" + router + "[replication]\nengine = \"physical\"\nsafeness = \"1-safe\"\n"
	if c, err = Parse("sm.toml", []byte(alone)); err != nil || len(c.Nodes) != 1 || !c.RouterDirect() {
		t.Fatalf("a primary alone: %v", err)
	}
	cases := []struct{ name, text, want string }{
		{"one node", nodes(1), "field nodes: design single-master takes a primary and 1 to 15 replicas"},
		{"one node waiting for a replica", strings.Replace(alone, "1-safe", "2-safe-received", 1), `a primary alone needs replication.engine = "physical" and replication.safeness = "1-safe"`},
		{"one node on the writeset engine", strings.Replace(alone, "physical", "writeset", 1), `a primary alone needs replication.engine = "physical"`},
		{"seventeen nodes", nodes(17), "found 17 node(s)"},
		{"pair without witness", nodes(2), "field witness: missing"},
		{"zero weight", nodes(3) + "weight = 0\n", "field nodes[2].weight: 0"},
		{"negative read weight", nodes(3) + "read_weight = -1\n", "field nodes[2].read_weight: -1"},
		{"bad policy", nodes(3) + router + "policy = \"fastest\"\n", `field router.policy: "fastest" is not a balancing policy`},
		{"bad max_lag", nodes(3) + router + "max_lag = \"soon\"\n", `field router.max_lag: "soon": not a lag`},
		{"zero max_lag", nodes(3) + router + "max_lag = 0\n", `field router.max_lag: 0`},
		{"no repl_listen", strings.Replace(nodes(3), "repl_listen = \"127.0.0.1:7102\"", "", 1), "field nodes[1].repl_listen: missing: every node of a single-master cluster"},
		{"bad ack", nodes(3) + "[replication]\nack = \"some\"\n", `field replication.ack: "some"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("sm.toml", []byte(tc.text))
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

const pgPair = `
cluster = "c"
design = "hot-standby"
[[users]]
name = "u"
password = "p"
[[nodes]]
id = "n1"
listen = "127.0.0.1:7001"
repl_listen = "127.0.0.1:7101"
metrics = "127.0.0.1:7201"
backend = "postgres"
[[nodes]]
id = "n2"
listen = "127.0.0.1:7002"
repl_listen = "127.0.0.1:7102"
metrics = "127.0.0.1:7202"
backend = "%s"
%s
`

// TestEngineDefaultWithCoordinator: a managed pair written for automatic
// failover (the coordinator, a witness) gets the physical engine by
// default, as one without; a file that sets the log's durability (only the
// writeset engine has relaxed and adaptive) keeps the writeset engine; an
// explicit engine is what is written.
func TestEngineDefaultWithCoordinator(t *testing.T) {
	text := strings.Replace(fmt.Sprintf(pgPair, "postgres", "raft_listen = \"127.0.0.1:7302\"\n[witness]\nid = \"w\"\nraft_listen = \"127.0.0.1:7300\"\n[replication]\nfailover = \"automatic\""),
		"metrics = \"127.0.0.1:7201\"\n", "metrics = \"127.0.0.1:7201\"\nraft_listen = \"127.0.0.1:7301\"\n", 1)
	c, err := Parse("e.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if c.Repl.Engine != EnginePhysical {
		t.Fatalf("engine %q, want physical for a coordinated pair of managed servers", c.Repl.Engine)
	}
	for _, tc := range []struct{ extra, engine string }{
		{"engine = \"writeset\"", EngineWriteset},
		{"engine = \"physical\"", EnginePhysical},
		{"durability = \"relaxed\"", EngineWriteset},
		{"standby_durability = \"strict\"", EngineWriteset},
	} {
		c, err = Parse("e.toml", []byte(strings.Replace(text, "failover = \"automatic\"", "failover = \"automatic\"\n"+tc.extra, 1)))
		if err != nil {
			t.Fatalf("%s: %v", tc.extra, err)
		}
		if c.Repl.Engine != tc.engine {
			t.Errorf("with %s: engine %q, want %q", tc.extra, c.Repl.Engine, tc.engine)
		}
	}
}

// TestEngine: replication.engine's default follows the back ends, and
// combinations the physical engine cannot run name the field.
func TestEngine(t *testing.T) {
	for _, tc := range []struct {
		name, backend2, extra string
		engine, want          string // engine expected, or a message fragment
		design                string // "" = hot-standby
	}{
		{"managed pair defaults to physical", "postgres", "", EnginePhysical, "", ""},
		{"explicit writeset on managed", "postgres", "[replication]\nengine = \"writeset\"", EngineWriteset, "", ""},
		{"mixed pair defaults to writeset", "sqlite", "", EngineWriteset, "", ""},
		{"external server defaults to writeset", "postgres", "dsn = \"postgres://x@127.0.0.1/db\"", EngineWriteset, "", ""},
		{"physical with one external server", "postgres", "dsn = \"postgres://x@127.0.0.1/db\"\n[replication]\nengine = \"physical\"", "", "field nodes[0].dsn: missing: with engine = \"physical\" every node's server is external (dsn) or every one is managed; 1 of 2 nodes name a dsn", ""},
		{"physical with external servers", "postgres", "dsn = \"postgres://x@127.0.0.1:5433/db\"\n[replication]\nengine = \"physical\"\nserver_role = \"op\"\nserver_password = \"pw\"", EnginePhysical, "", "external"},
		{"physical external with postgres.settings", "postgres", "dsn = \"postgres://x@127.0.0.1:5433/db\"\n[nodes.postgres]\nsettings = { work_mem = \"'8MB'\" }\n[replication]\nengine = \"physical\"\nserver_role = \"op\"", "", "field nodes[1].postgres.settings: an external server's configuration is its operator's", "external"},
		{"physical external without server_role", "postgres", "dsn = \"postgres://x@127.0.0.1:5433/db\"\n[replication]\nengine = \"physical\"", "", "field replication.server_role: missing", "external"},
		{"physical external sessions as the server role", "postgres", "dsn = \"postgres://x@127.0.0.1:5433/db\"\n[replication]\nengine = \"physical\"\nserver_role = \"x\"", "", "field nodes[0].dsn: its role \"x\" is replication.server_role", "external"},
		{"physical external with postgres.port", "postgres", "dsn = \"postgres://x@127.0.0.1:5433/db\"\n[nodes.postgres]\nport = 5433\n[replication]\nengine = \"physical\"\nserver_role = \"op\"", "", "field nodes[1].postgres.port: 5433: an external server's port is its dsn's", "external"},
		{"physical with sqlite", "sqlite", "[replication]\nengine = \"physical\"", "", "use engine = \"writeset\" for SQLite", ""},
		{"unknown engine", "postgres", "[replication]\nengine = \"logical\"", "", "field replication.engine: \"logical\"", ""},
		{"physical with automatic failover, no coordinator", "postgres", "[replication]\nengine = \"physical\"\nfailover = \"automatic\"", "", "field replication.failover: \"automatic\" needs the coordinator", ""},
		{"physical with postgres.port", "postgres", "[nodes.postgres]\nport = 5433\n[replication]\nengine = \"physical\"", "", "field nodes[1].postgres.port: 5433: with engine = \"physical\" the server listens on repl_listen's port", ""},
		{"bad slot size", "postgres", "[replication]\nmax_slot_wal_keep_size = \"lots\"", "", "field replication.max_slot_wal_keep_size", ""},
		{"single-master on physical", "postgres", "[replication]\nengine = \"physical\"\n[router]\nlisten = \"127.0.0.1:7300\"", EnginePhysical, "", "single-master"},
		{"single-master of managed servers defaults to physical", "postgres", "[router]\nlisten = \"127.0.0.1:7300\"", EnginePhysical, "", "single-master"},
		{"single-master with a relaxed log defaults to writeset", "postgres", "[replication]\ndurability = \"relaxed\"\n[router]\nlisten = \"127.0.0.1:7300\"", EngineWriteset, "", "single-master"},
		{"single-master with an external server defaults to writeset", "postgres", "dsn = \"postgres://x@127.0.0.1/db\"\n[router]\nlisten = \"127.0.0.1:7300\"", EngineWriteset, "", "single-master"},
		{"single-master physical with sqlite", "sqlite", "[replication]\nengine = \"physical\"", "", "use engine = \"writeset\" for SQLite", "single-master"},
		{"router.direct on physical", "postgres", "[router]\nlisten = \"127.0.0.1:7300\"\ndirect = true", EnginePhysical, "", "single-master"},
		{"router.direct on writeset", "postgres", "[replication]\nengine = \"writeset\"\n[router]\nlisten = \"127.0.0.1:7300\"\ndirect = true", "", "field router.direct: the router logs in to each node's PostgreSQL server itself, which only engine = \"physical\"", "single-master"},
		{"router.direct in clear text", "postgres", "[router]\nlisten = \"127.0.0.1:7300\"\ndirect = true\n[security]\ninter_node = \"none\"", EnginePhysical, "", "single-master"},
		{"router.direct on external servers", "postgres", "dsn = \"postgres://x@127.0.0.1:5433/db\"\n[replication]\nengine = \"physical\"\nserver_role = \"op\"\n[router]\nlisten = \"127.0.0.1:7300\"\ndirect = true", "", "field router.direct: nodes[0] (n1) names a dsn", "external"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf(pgPair, tc.backend2, tc.extra)
			if tc.design != "" && tc.design != "external" {
				text = strings.Replace(text, `design = "hot-standby"`, fmt.Sprintf("design = %q", tc.design), 1)
				if !strings.Contains(text, tc.design) {
					t.Fatalf("the test's cluster file names no design to replace:\n%s", text)
				}
			}
			if tc.design == "external" {
				// Both servers the operator's; repl_listen is not needed.
				text = strings.Replace(text, "repl_listen = \"127.0.0.1:7101\"\nmetrics = \"127.0.0.1:7201\"\nbackend = \"postgres\"\n", "metrics = \"127.0.0.1:7201\"\nbackend = \"postgres\"\ndsn = \"postgres://x@127.0.0.1:5432/db\"\n", 1)
				if !strings.Contains(text, "5432/db") {
					t.Fatalf("no dsn given to n1:\n%s", text)
				}
			}
			c, err := Parse("e.toml", []byte(text))
			if tc.want != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Repl.Engine != tc.engine || c.Physical() != (tc.engine == EnginePhysical) {
				t.Fatalf("engine %q, want %q", c.Repl.Engine, tc.engine)
			}
			wantLag := uint64(DefaultMaxLagGSNs)
			if c.Physical() {
				wantLag = DefaultMaxLagBytes
			}
			if c.Router != nil && c.Router.MaxLag.GSNs != wantLag {
				t.Fatalf("router.max_lag %d, want %d", c.Router.MaxLag.GSNs, wantLag)
			}
		})
	}
	sq := strings.ReplaceAll(fmt.Sprintf(pgPair, "sqlite", ""), "backend = \"postgres\"", "backend = \"sqlite\"")
	c, err := Parse("s.toml", []byte(sq))
	if err != nil || c.Repl.Engine != EngineWriteset {
		t.Fatalf("sqlite pair: %v %+v", err, c)
	}
}

// The [lab] section and --lab: values parse, bad ones name the field.
func TestLab(t *testing.T) {
	for _, tc := range []struct {
		section string
		err     string // "" = valid
	}{
		{"[lab]\ncpu_per_node = 0.25\ncpu_client = 1.0\n", ""},
		{"[lab]\ncpu_per_node = 0.25\nnet_delay = \"0.2ms\"\nnet_jitter = \"0.05ms\"\nnet_loss = 0.1\n", ""},
		{"[lab]\ncpu_per_node = 0.001\n", "field lab.cpu_per_node: 0.001"},
		{"[lab]\ncpu_client = -1\n", "field lab.cpu_client"},
		{"[lab]\ncpu_router = 5000\n", "field lab.cpu_router"},
		{"[lab]\nnet_delay = \"-1ms\"\n", "field lab.net_delay"},
		{"[lab]\nnet_delay = \"1ms\"\nnet_jitter = \"2ms\"\n", "field lab.net_jitter"},
		{"[lab]\nnet_loss = 101\n", "field lab.net_loss"},
		{"[lab]\nnetns = false\nnet_delay = \"1ms\"\n", "field lab.netns"},
		{"[lab]\ncpu = 1\n", `unknown field "lab.cpu"`},
	} {
		c, err := Parse("lab.toml", []byte(good+tc.section))
		if tc.err == "" {
			if err != nil || c.Lab == nil {
				t.Errorf("%q: %v", tc.section, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: got %v, want an error with %q", tc.section, err, tc.err)
		}
	}
	base := Lab{CPUPerNode: 0.5, CPUClient: 1}
	for _, tc := range []struct {
		flag string
		want string // String() of the result, or the error's text
		ok   bool
	}{
		{"cpu=0.25", "cpu=0.25,client=1", true},
		{"on", "cpu=0.5,client=1", true},
		{"cpu=0.25,delay=0.2ms", "cpu=0.25,client=1,delay=200µs,netns=true", true},
		{"client=2,router=0.5,netns=true", "cpu=0.5,client=2,router=0.5,netns=true", true},
		{"cpu_per_node=0.3,loss=1", "cpu=0.3,client=1,loss=1,netns=true", true},
		{"cpu=lots", "cpu=\"lots\" is not a number", false},
		{"cpu", "is not key=value", false},
		{"disk=1", `unknown key "disk"`, false},
		{"cpu=0", "client=1", true}, // 0: no node quota
		{"cpu=0.001", "field lab.cpu_per_node", false},
		{"delay=1ms,netns=false", "field lab.netns", false},
		{"delay=soon", "not a duration", false},
	} {
		got, err := ParseLabFlag(tc.flag, base)
		if tc.ok {
			if err != nil || got.String() != tc.want {
				t.Errorf("--lab %s: got %q, %v; want %q", tc.flag, got.String(), err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--lab %s: got %v, want an error with %q", tc.flag, err, tc.want)
		}
	}
}

// TestPrivateDir: a run or data directory loses read and write for group
// and others, and keeps the traverse bits a managed PostgreSQL (another OS
// user) needs to reach its data directory below it.
func TestPrivateDir(t *testing.T) {
	for _, c := range []struct{ before, after os.FileMode }{
		{0o700, 0o700}, {0o711, 0o711}, {0o755, 0o711}, {0o777, 0o711}, {0o750, 0o710}, {0o701, 0o701},
	} {
		d := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, c.before); err != nil {
			t.Fatal(err)
		}
		if err := PrivateDir(d); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.after {
			t.Errorf("%v: %v after PrivateDir, want %v", c.before, st.Mode().Perm(), c.after)
		}
	}
	d := filepath.Join(t.TempDir(), "a", "b")
	if err := PrivateDir(d); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("a new directory: %v %v, want 0700", st.Mode().Perm(), err)
	}
}

// TestRouterDirectDefault: the router logs in to the servers itself by
// default on the physical engine's managed servers, not elsewhere, and the
// file's direct = false keeps the node's relay.
func TestRouterDirectDefault(t *testing.T) {
	router := "\n[router]\nlisten = \"127.0.0.1:7300\""
	for _, tc := range []struct {
		name, backend2, extra string
		want                  bool
	}{
		{"physical pair", "postgres", router, true},
		{"physical pair, direct = false", "postgres", router + "\ndirect = false", false},
		{"writeset pair", "postgres", "[replication]\nengine = \"writeset\"" + router, false},
		{"sqlite pair", "sqlite", router, false},
		{"external servers", "postgres", "dsn = \"postgres://x@127.0.0.1:5433/db\"\n[replication]\nengine = \"physical\"\nserver_role = \"op\"" + router, false},
		{"no router", "postgres", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf(pgPair, tc.backend2, tc.extra)
			if strings.Contains(tc.extra, "dsn =") {
				text = strings.Replace(text, "repl_listen = \"127.0.0.1:7101\"\nmetrics = \"127.0.0.1:7201\"\nbackend = \"postgres\"\n", "metrics = \"127.0.0.1:7201\"\nbackend = \"postgres\"\ndsn = \"postgres://x@127.0.0.1:5432/db\"\n", 1)
			}
			c, err := Parse("d.toml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.RouterDirect(); got != tc.want {
				t.Fatalf("RouterDirect() = %v, want %v", got, tc.want)
			}
		})
	}
}
