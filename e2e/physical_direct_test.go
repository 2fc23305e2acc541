package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/config"
)

// TestPhysicalRouterDirect: router.direct on the physical engine. The
// router logs in to each node's PostgreSQL server itself, over TLS with its
// cluster certificate (one hop, as HAProxy's, instead of the router's and
// the node's relay). The servers admit that certificate alone, and only as
// the cluster's roles; sessions survive a SIGKILL of the primary's node and
// server and a switchover as through the nodes, and nothing acknowledged
// is lost.
func TestPhysicalRouterDirect(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	t.Run("mtls", func(t *testing.T) { testPhysicalRouterDirect(t, false) })
	// security.inter_node = "none" (loopback only): no certificates; the
	// router logs in by SCRAM with each role's derived password.
	t.Run("cleartext", func(t *testing.T) { testPhysicalRouterDirect(t, true) })
}

func testPhysicalRouterDirect(t *testing.T, cleartext bool) {
	// The coordinator needs mutual TLS: the clear-text pair fails over by
	// hand (switchover below), the other automatically.
	extra := "failover = \"automatic\"\nlease = \"1s\"\nlease_grace = \"500ms\"\nack_timeout = \"2s\"\n"
	if cleartext {
		extra = "ack_timeout = \"2s\"\n"
	}
	h := physicalHS(t, "2-safe-received", extra, !cleartext)
	b, err := os.ReadFile(h.file)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "[router]\n", "[router]\ndirect = true\n", 1)
	if cleartext {
		text = strings.Replace(text, "[[users]]\n", "[security]\ninter_node = \"none\"\n[[users]]\n", 1)
	}
	if err := os.WriteFile(h.file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(h.file)
	if err != nil {
		t.Fatal(err)
	}
	repl := map[string]string{}
	for _, n := range c.Nodes {
		repl[n.ID] = n.Repl
	}
	var p *physPair
	if cleartext {
		h.start("n1")
		h.start("n2")
		h.start("router")
		p = &physPair{t: t, file: h.file, router: h.router, reads: h.reads, nodes: h.nodes, admin: h.admin, logDir: h.dir}
		p.waitStreaming("n1", "n2")
	} else {
		p = h.startCoordinatedPair()
	}
	ctx := context.Background()

	// Where the router's sessions land: the server's own TCP port, the
	// router's certificate, the client's role.
	where := func(addr string) (port, dn, user string) {
		t.Helper()
		conn := connect(t, h.dsn(addr))
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT coalesce(inet_server_port()::text, ''), coalesce(s.client_dn, ''), current_user FROM pg_stat_ssl s WHERE s.pid = pg_backend_pid()").Scan(&port, &dn, &user); err != nil {
			t.Fatal(err)
		}
		return port, dn, user
	}
	// routerOn: the router's sessions run on node id's server (its repl
	// address) after what happened (when).
	routerOn := func(id, when string) {
		t.Helper()
		if port, _, _ := where(h.router); !strings.HasSuffix(repl[id], ":"+port) {
			t.Fatalf("after the %s the router's sessions run on port %s; want %s's server (%s)", when, port, id, repl[id])
		}
	}
	wantDN := "/O=tandem/CN=router"
	if cleartext {
		wantDN = ""
	}
	for addr, node := range map[string]string{h.router: "n1", h.reads: "n2"} {
		port, dn, user := where(addr)
		if !strings.HasSuffix(repl[node], ":"+port) || dn != wantDN || user != "tandem" {
			t.Fatalf("a session through %s runs on port %s as %q by %q; want %s's server (%s) by the router's certificate as tandem", addr, port, user, dn, node, repl[node])
		}
	}
	// Through a node it still is the node's relay (the Unix socket).
	if port, _, _ := where(h.nodes["n1"]); port != "" {
		t.Fatalf("a session through n1's own door runs on port %q; want the server's socket", port)
	}

	// Nobody else gets in at the server's port: no certificate, a node's
	// certificate, the router's as a role the cluster file does not name,
	// clear text.
	certs := filepath.Join(h.dir, "run", "certs")
	host, port, _ := strings.Cut(repl["n1"], ":")
	refused := []struct{ name, conninfo, want string }{
		{"no certificate", "user=tandem sslmode=require", "requires a valid client certificate"},
		{"a node's certificate", "user=tandem sslmode=require sslcert=" + filepath.Join(certs, "n2.crt") + " sslkey=" + filepath.Join(certs, "n2.key"), "certificate authentication failed"},
		{"the router's as the superuser", "user=postgres sslmode=require sslcert=" + filepath.Join(certs, "router.crt") + " sslkey=" + filepath.Join(certs, "router.key"), "certificate authentication failed"},
		{"clear text", "user=tandem sslmode=disable", "no pg_hba.conf entry"},
	}
	if cleartext {
		// The user's own password is tandem's, not the server's; the
		// superuser and the replication role have none that works.
		refused = []struct{ name, conninfo, want string }{
			{"the user's own password", "user=tandem password=secret sslmode=disable", "password authentication failed"},
			{"the superuser", "user=postgres password=secret sslmode=disable", "password authentication failed"},
			{"no password", "user=tandem sslmode=disable", "password authentication failed"},
		}
	}
	for _, tc := range refused {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		conn, err := pgx.Connect(cctx, "host="+host+" port="+port+" dbname=tandem connect_timeout=5 "+tc.conninfo)
		cancel()
		if err == nil {
			conn.Close(ctx)
			t.Fatalf("%s: let in at %s", tc.name, repl["n1"])
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}

	// SIGKILL of the primary's node and server under writers through the
	// router, then a switchover back: nothing acknowledged lost.
	createTestTable(t, h.dsn(h.router))
	if cleartext {
		acked := switchoverUnderLoad(t, p, "n2")
		checkAcked(t, h.dsn(h.nodes["n2"]), acked)
		routerOn("n2", "switchover")
		return
	}
	killPrimaryUnderWriters(t, h, p)
	routerOn("n2", "failover")
	h.start("n1")
	p.waitStreaming("n2", "n1")
	acked := switchoverUnderLoad(t, p, "n1")
	checkAcked(t, h.dsn(h.nodes["n1"]), acked)
	routerOn("n1", "switchover")
}

// TestPhysicalSingleMasterDirect: router.direct on a physical single-master
// cluster. The router's sessions run on the servers themselves; a read at
// read_consistency = session still sees its session's last commit on a
// replica that replays 300 ms late (the commit position asked on the
// primary's server, the wait on the replica's), where eventual reads miss
// it.
func TestPhysicalSingleMasterDirect(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	s := upPhysSM(t, 3, map[string]string{"n1": "read_weight = 0\n", "router": "policy = \"round-robin\"\ndirect = true\n"},
		map[string]string{"n1": `, cluster_name = "'n1'"`, "n2": `, recovery_min_apply_delay = "'300ms'", cluster_name = "'n2'"`, "n3": `, cluster_name = "'n3'"`})
	s.waitReplicasStreaming("n1", "n2", "n3")
	ctx := context.Background()
	c := connect(t, s.DSN)
	for _, q := range []string{"CREATE TABLE ryw (id bigint PRIMARY KEY, session int)"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var dn string
	if err := c.QueryRow(ctx, "SELECT coalesce(client_dn, '') FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&dn); err != nil || dn != "/O=tandem/CN=router" {
		t.Fatalf("the router's session on the primary is by %q (%v); want the router's certificate", dn, err)
	}
	c.Close(ctx)
	r := writeThenRead(t, s.DSN, "session", 4, 30, 1_000_000)
	t.Logf("session: %d pairs, %d stale, %d read on a replica", r.pairs.Load(), r.stale.Load(), r.onReplica.Load())
	if r.pairs.Load() != 120 || r.stale.Load() != 0 || r.onReplica.Load() < r.pairs.Load()*3/4 {
		t.Errorf("read_consistency = session: %d pairs, %d stale, %d on a replica (want 120, 0, most)", r.pairs.Load(), r.stale.Load(), r.onReplica.Load())
	}
	r = writeThenRead(t, s.DSN, "eventual", 4, 30, 2_000_000)
	t.Logf("eventual: %d pairs, %d stale, %d read on a replica", r.pairs.Load(), r.stale.Load(), r.onReplica.Load())
	if r.stale.Load() == 0 {
		t.Errorf("read_consistency = eventual: no stale read in %d pairs, with n2 replaying 300 ms late: the session check above proves nothing", r.pairs.Load())
	}
}
