package sweep

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tandemdb/tandem/bench"
)

// ErrBadOption marks an invalid sweep option; the message names the flag.
var ErrBadOption = errors.New("invalid sweep option")

// Families of configurations; each has its own baseline for ratios.
const (
	FamilyTandem   = "tandem"
	FamilyPostgres = "postgresql"
	// FamilyTandemPG is tandem's pair on PostgreSQL back ends: measured
	// against the same PostgreSQL baseline as PostgreSQL's own pair.
	FamilyTandemPG = "tandem-postgresql"
)

// Baselines of the two families: ratios are MQTh / MQTh(baseline), same mix.
const (
	TandemBaseline   = "standalone-strict"
	PostgresBaseline = "pg-standalone-on"
)

// Kinds of setup a configuration runs on.
const (
	kindTandem       = "tandem"        // a tandem cluster (cluster.Start)
	kindPGStandalone = "pg-standalone" // one managed PostgreSQL server
	kindPGPair       = "pg-pair"       // a PostgreSQL streaming-replication pair
	// kindPGPairHAProxy is the same pair with HAProxy in front of it (the
	// stack users assemble instead of tandem's pair); clients connect to
	// HAProxy.
	kindPGPairHAProxy = "pg-pair-haproxy"
	// kindPGPairPgpool is the same pair with pgpool-II in front of it (seed
	// 001's PostgreSQL balancer); clients connect to pgpool.
	kindPGPairPgpool = "pg-pair-pgpool"
)

// Config is one configuration of the sweep. Its Name is part of the user
// interface (--configs, the table, the files).
type Config struct {
	Name   string `json:"name"`
	Family string `json:"family"`
	// Level is the safeness level for check (a): 1-safe, 2-safe-received,
	// 2-safe-visible, 2-safe-durable; "" for standalone servers.
	Level string `json:"level,omitempty"`
	// Setting says in a few words what the configuration is.
	Setting string `json:"setting"`

	kind string
	// tandem
	Design            string `json:"design,omitempty"`
	Safeness          string `json:"safeness,omitempty"`
	Durability        string `json:"durability,omitempty"`
	StandbyDurability string `json:"standby_durability,omitempty"`
	SQLiteSynchronous string `json:"sqlite_synchronous,omitempty"`
	// Backend of tandem's nodes: "" (sqlite) or "postgres" (managed).
	Backend string `json:"backend,omitempty"`
	// InterNode is security.inter_node: "" (mutual TLS, the default) or
	// "none" (clear text: what TLS costs).
	InterNode string `json:"inter_node,omitempty"`
	// Engine is replication.engine of a tandem pair: "" (writeset) or
	// "physical" (PostgreSQL's streaming replication run by tandem).
	Engine string `json:"engine,omitempty"`
	// Policy is router.policy of a single-master cluster with the router
	// in front ("": no router, clients on n1).
	Policy string `json:"policy,omitempty"`
	// ReadConsistency is router.read_consistency of such a cluster ("":
	// the router's default, session; Options.ReadConsistency sets it).
	ReadConsistency string `json:"read_consistency,omitempty"`
	// Direct is router.direct: the router logs in to the physical
	// engine's servers itself (one hop, in the router's host).
	Direct bool `json:"router_direct,omitempty"`
	// Failover is replication.failover of a physical pair: "" (manual,
	// the sweep's default) or "automatic" (a witness, the primary's lease,
	// sessions that survive a failover: what the examples run).
	Failover string `json:"failover,omitempty"`
	// PostgreSQL
	SynchronousCommit string `json:"synchronous_commit,omitempty"`
	// ClientTLS: the servers speak TLS and the workload's clients encrypt
	// end to end through HAProxy (sslmode=require), as users of that
	// stack who need encryption in transit do.
	ClientTLS bool `json:"client_tls,omitempty"`
	// StandbyWeight is pgpool-II's backend_weight of the standby
	// (pg-pair-pgpool-*; the primary's is 1): 1 balances the reads evenly,
	// 0 keeps every statement on the primary (pgpool a pass-through).
	StandbyWeight *int `json:"pgpool_standby_weight,omitempty"`
	// Suite, System and Shape place a configuration in a suite's table
	// (see SuiteSeed001): its peer group and seed 001's mode (n1, n1+(n2),
	// n1+n2+<balancer>).
	Suite  string `json:"suite,omitempty"`
	System string `json:"system,omitempty"`
	Shape  string `json:"shape,omitempty"`
}

// Setup is the key of the running system a configuration needs: consecutive
// configurations with the same key share one started, loaded system within
// a round (the PostgreSQL pair serves its four levels, switched with ALTER
// SYSTEM; the standalone server its two).
func (c Config) setup() string {
	if c.sharedPhysical() {
		if c.Design == "single-master" {
			return "sm-pgphys-router-auto"
		}
		if c.Direct && c.Failover == "automatic" {
			return "hs-pgphys-router-auto"
		}
		if c.Direct && c.InterNode == "none" {
			return "hs-pgphys-router-cleartext"
		}
		if c.Direct {
			return "hs-pgphys-router"
		}
		return "hs-pgphys"
	}
	if c.kind == kindTandem {
		return c.Name
	}
	return c.kind
}

// sharedPhysical: tandem's hot-standby pair on the physical engine, whose
// four levels one cluster serves in turn (`tandem set`), as one
// PostgreSQL pair serves its four synchronous_commit levels: the pair
// compared runs on the same servers and data at every level.
func (c Config) sharedPhysical() bool {
	if c.kind != kindTandem || c.Engine != "physical" {
		return false
	}
	if c.Design == "single-master" {
		return c.Direct && c.Failover == "automatic"
	}
	return c.Design == "hot-standby" && (c.Policy == "" && c.InterNode == "" || c.Direct)
}

func hs(name, level, durability, standbyDurability string) Config {
	return Config{
		Name: name, Family: FamilyTandem, Level: level, kind: kindTandem,
		Design: "hot-standby", Safeness: level, Durability: durability, StandbyDurability: standbyDurability,
		SQLiteSynchronous: "NORMAL",
		Setting: fmt.Sprintf("hot-standby %s, primary log %s, standby log %s, SQLite NORMAL",
			level, durability, standbyDurability),
	}
}

// hsPG is tandem's hot-standby pair on managed PostgreSQL back ends
// (each node's server runs with synchronous_commit=off: tandem's log is
// the durable record).
func hsPG(name, level, durability, standbyDurability string) Config {
	return Config{
		Name: name, Family: FamilyTandemPG, Level: level, kind: kindTandem, Backend: "postgres",
		Design: "hot-standby", Safeness: level, Durability: durability, StandbyDurability: standbyDurability,
		Setting: fmt.Sprintf("tandem hot-standby on PostgreSQL back ends, %s, primary log %s, standby log %s",
			level, durability, standbyDurability),
	}
}

// hsPhys is tandem's hot-standby pair of managed PostgreSQL servers on
// the physical engine (safeness = synchronous_commit, sessions relayed).
func hsPhys(name, level string) Config {
	return Config{
		Name: name, Family: FamilyTandemPG, Level: level, kind: kindTandem, Backend: "postgres", Engine: "physical",
		Design: "hot-standby", Safeness: level, Durability: "strict", StandbyDurability: "strict",
		Setting: fmt.Sprintf("tandem hot-standby on PostgreSQL back ends, physical engine (streaming replication), %s", level),
	}
}

// hsPhysRouter is hsPhys behind tandem's router with router.direct: the
// clients' front door in its own place (the router's host on emulated
// hosts), as HAProxy's is, one hop from the servers.
func hsPhysRouter(name, level string) Config {
	c := hsPhys(name, level)
	c.Policy, c.Direct = "least-connected", true
	c.Setting += ", clients through tandem's router, which logs in to the servers itself (router.direct)"
	return c
}

// smPhysRouter is the physical pair as single-master with the router in
// front (router.direct, TLS on its hop, automatic failover): writes on
// the primary, each session's reads on the node the least-connected
// policy gives it, the standby included, at the default read consistency
// (session: a read after the session's write waits until the standby has
// replayed it). The pair pgpool-II's users assemble with load balancing,
// and what tandem's single-master example runs.
func smPhysRouter(name, level string) Config {
	c := automatic(hsPhysRouter(name, level))
	c.Design = "single-master"
	c.Setting = fmt.Sprintf("tandem single-master pair on PostgreSQL back ends, physical engine (streaming replication), %s, "+
		"clients through tandem's router (router.direct, TLS to the servers), reads balanced over both servers (least-connected, session consistency), automatic failover", level)
	return c
}

// automatic is c with automatic failover: a witness completes the
// coordinator's quorum, the primary holds a lease, and the router's
// sessions survive a failover (the examples' setting).
func automatic(c Config) Config {
	c.Failover = "automatic"
	c.Setting += ", automatic failover (a witness, the primary's lease; sessions survive a failover)"
	return c
}

// cleartext is c without TLS between tandem's processes (what TLS costs).
func cleartext(c Config) Config {
	c.InterNode = "none"
	c.Setting += ", inter-node channels in clear text (no TLS)"
	return c
}

func pg(kind, name, level, syncCommit, setting string) Config {
	return Config{Name: name, Family: FamilyPostgres, Level: level, kind: kind, SynchronousCommit: syncCommit, Setting: setting}
}

// haproxyTLS is HAProxy's stack with its clients' sessions encrypted to
// the servers: the peer of tandem's router with TLS on its hop.
func haproxyTLS(name, level, syncCommit string) Config {
	c := pg(kindPGPairHAProxy, name, level, syncCommit, fmt.Sprintf("HAProxy (mode tcp, primary check) in front of the streaming pair, synchronous_commit=%s (%s), clients' sessions in TLS to the servers (sslmode=require through HAProxy)", syncCommit, level))
	c.ClientTLS = true
	return c
}

// Configs returns every configuration, in the order the sweep runs them.
func Configs() []Config {
	return []Config{
		{Name: "standalone-strict", Family: FamilyTandem, kind: kindTandem, Design: "standalone", SQLiteSynchronous: "FULL",
			Setting: "standalone, SQLite synchronous=FULL (WAL fsync per commit)"},
		{Name: "standalone-relaxed", Family: FamilyTandem, kind: kindTandem, Design: "standalone", SQLiteSynchronous: "NORMAL",
			Setting: "standalone, SQLite synchronous=NORMAL (fsync at checkpoints)"},
		hs("hs-received-strict", "2-safe-received", "strict", "relaxed"),
		hs("hs-received-relaxed", "2-safe-received", "relaxed", "relaxed"),
		cleartext(hs("hs-received-relaxed-cleartext", "2-safe-received", "relaxed", "relaxed")),
		hs("hs-1safe-relaxed", "1-safe", "relaxed", "relaxed"),
		hs("hs-visible-relaxed", "2-safe-visible", "relaxed", "relaxed"),
		hs("hs-durable-relaxed", "2-safe-durable", "relaxed", "relaxed"),
		hs("hs-durable-relaxed-standby-strict", "2-safe-durable", "relaxed", "strict"),
		pg(kindPGStandalone, "pg-standalone-on", "", "on", "one PostgreSQL server, synchronous_commit=on"),
		pg(kindPGStandalone, "pg-standalone-off", "", "off", "one PostgreSQL server, synchronous_commit=off"),
		pg(kindPGPair, "pg-pair-local", "1-safe", "local", "streaming pair, synchronous_commit=local (1-safe)"),
		pg(kindPGPair, "pg-pair-remote_write", "2-safe-received", "remote_write", "streaming pair, synchronous_commit=remote_write (2-safe received)"),
		pg(kindPGPair, "pg-pair-on", "2-safe-durable", "on", "streaming pair, synchronous_commit=on (2-safe durable)"),
		pg(kindPGPair, "pg-pair-remote_apply", "2-safe-visible", "remote_apply", "streaming pair, synchronous_commit=remote_apply (2-safe visible)"),
		pg(kindPGPairHAProxy, "pg-pair-haproxy-local", "1-safe", "local", "HAProxy (mode tcp, primary check) in front of the streaming pair, synchronous_commit=local (1-safe)"),
		pg(kindPGPairHAProxy, "pg-pair-haproxy-remote_write", "2-safe-received", "remote_write", "HAProxy (mode tcp, primary check) in front of the streaming pair, synchronous_commit=remote_write (2-safe received)"),
		pg(kindPGPairHAProxy, "pg-pair-haproxy-on", "2-safe-durable", "on", "HAProxy (mode tcp, primary check) in front of the streaming pair, synchronous_commit=on (2-safe durable)"),
		pg(kindPGPairHAProxy, "pg-pair-haproxy-remote_apply", "2-safe-visible", "remote_apply", "HAProxy (mode tcp, primary check) in front of the streaming pair, synchronous_commit=remote_apply (2-safe visible)"),
		haproxyTLS("pg-pair-haproxy-tls-local", "1-safe", "local"),
		haproxyTLS("pg-pair-haproxy-tls-remote_write", "2-safe-received", "remote_write"),
		haproxyTLS("pg-pair-haproxy-tls-on", "2-safe-durable", "on"),
		haproxyTLS("pg-pair-haproxy-tls-remote_apply", "2-safe-visible", "remote_apply"),
		hsPG("hs-pg-1safe-relaxed", "1-safe", "relaxed", "relaxed"),
		hsPG("hs-pg-received-relaxed", "2-safe-received", "relaxed", "relaxed"),
		hsPG("hs-pg-visible-relaxed", "2-safe-visible", "relaxed", "relaxed"),
		hsPG("hs-pg-durable-relaxed-standby-strict", "2-safe-durable", "relaxed", "strict"),
		hsPhys("hs-pgphys-1safe", "1-safe"),
		hsPhys("hs-pgphys-received", "2-safe-received"),
		hsPhys("hs-pgphys-visible", "2-safe-visible"),
		hsPhys("hs-pgphys-durable", "2-safe-durable"),
		hsPhysRouter("hs-pgphys-router-1safe", "1-safe"),
		hsPhysRouter("hs-pgphys-router-received", "2-safe-received"),
		hsPhysRouter("hs-pgphys-router-visible", "2-safe-visible"),
		hsPhysRouter("hs-pgphys-router-durable", "2-safe-durable"),
		cleartext(hsPhysRouter("hs-pgphys-router-cleartext-1safe", "1-safe")),
		cleartext(hsPhysRouter("hs-pgphys-router-cleartext-received", "2-safe-received")),
		cleartext(hsPhysRouter("hs-pgphys-router-cleartext-visible", "2-safe-visible")),
		cleartext(hsPhysRouter("hs-pgphys-router-cleartext-durable", "2-safe-durable")),
		automatic(hsPhysRouter("hs-pgphys-router-auto-1safe", "1-safe")),
		automatic(hsPhysRouter("hs-pgphys-router-auto-received", "2-safe-received")),
		automatic(hsPhysRouter("hs-pgphys-router-auto-visible", "2-safe-visible")),
		automatic(hsPhysRouter("hs-pgphys-router-auto-durable", "2-safe-durable")),
		smPhysRouter("sm-pgphys-router-auto-1safe", "1-safe"),
		smPhysRouter("sm-pgphys-router-auto-received", "2-safe-received"),
		smPhysRouter("sm-pgphys-router-auto-visible", "2-safe-visible"),
		smPhysRouter("sm-pgphys-router-auto-durable", "2-safe-durable"),
	}
}

// ConfigNames lists every configuration name in run order.
func ConfigNames() []string {
	var names []string
	for _, c := range Configs() {
		names = append(names, c.Name)
	}
	return names
}

// SelectConfigs resolves the --configs list ("" or "all" means every
// configuration). The result keeps the run order of Configs, whatever the
// order of the list, so configurations sharing a PostgreSQL setup run
// back to back.
func SelectConfigs(list string) ([]Config, error) {
	all := Configs()
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(ConfigNames(), n) {
			return nil, fmt.Errorf("%w: --configs: %q is not a configuration; use all or a comma list of %s",
				ErrBadOption, n, strings.Join(ConfigNames(), ", "))
		}
		want[n] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("%w: --configs: empty list; use all or a comma list of %s", ErrBadOption, strings.Join(ConfigNames(), ", "))
	}
	var out []Config
	for _, c := range all {
		if want[c.Name] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Mixes the sweep knows (bench's TM1 mix names).
var knownMixes = []string{"r80w20", "r20w80", "read-only"}

// SelectMixes resolves the --mixes list.
func SelectMixes(list string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(list, ",") {
		m = strings.ToLower(strings.TrimSpace(m))
		if m == "" {
			continue
		}
		if !slices.Contains(knownMixes, m) {
			return nil, fmt.Errorf("%w: --mixes: %q is not a TM1 mix; use a comma list of %s", ErrBadOption, m, strings.Join(knownMixes, ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --mixes: empty list; use e.g. r80w20,r20w80", ErrBadOption)
	}
	return out, nil
}

// SelectWorkloadMixes resolves --mixes for --workload: TM1's as
// SelectMixes, another workload's against the mixes it registers.
func SelectWorkloadMixes(workload, list string) ([]string, error) {
	if workload == "" || workload == "tm1" {
		return SelectMixes(list)
	}
	w, err := bench.Lookup(workload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	var names []string
	for _, m := range w.Mixes() {
		names = append(names, m.Name)
	}
	var out []string
	for _, m := range strings.Split(list, ",") {
		m = strings.ToLower(strings.TrimSpace(m))
		if m == "" {
			continue
		}
		if !slices.Contains(names, m) {
			return nil, fmt.Errorf("%w: --mixes: %q is not a mix of %s; use a comma list of %s", ErrBadOption, m, workload, strings.Join(names, ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --mixes: empty list; use a comma list of %s", ErrBadOption, strings.Join(names, ", "))
	}
	return out, nil
}

// levelPairs are check (a)'s matching safeness levels: a tandem hot-standby
// configuration and the PostgreSQL pair level that promises the same.
var levelPairs = []struct{ Level, Tandem, Postgres string }{
	{"1-safe", "hs-1safe-relaxed", "pg-pair-local"},
	{"2-safe-received", "hs-received-relaxed", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-visible-relaxed", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-durable-relaxed", "pg-pair-on"},
	{"2-safe-durable", "hs-durable-relaxed-standby-strict", "pg-pair-on"},
	{"1-safe", "hs-pg-1safe-relaxed", "pg-pair-local"},
	{"2-safe-received", "hs-pg-received-relaxed", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-pg-visible-relaxed", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-pg-durable-relaxed-standby-strict", "pg-pair-on"},
	{"1-safe", "hs-pgphys-1safe", "pg-pair-local"},
	{"2-safe-received", "hs-pgphys-received", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-pgphys-visible", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-pgphys-durable", "pg-pair-on"},
}

// physicalPairs are the comparison issue 13 asks for: at each safeness
// level, tandem's physical pair against the stack users would assemble
// instead (HAProxy in front of PostgreSQL's streaming pair) and against
// PostgreSQL's pair with clients connected directly.
var physicalPairs = []struct{ Level, Physical, HAProxy, Direct string }{
	{"1-safe", "hs-pgphys-1safe", "pg-pair-haproxy-local", "pg-pair-local"},
	{"2-safe-received", "hs-pgphys-received", "pg-pair-haproxy-remote_write", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-pgphys-visible", "pg-pair-haproxy-remote_apply", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-pgphys-durable", "pg-pair-haproxy-on", "pg-pair-on"},
	{"1-safe", "hs-pgphys-router-1safe", "pg-pair-haproxy-local", "pg-pair-local"},
	{"2-safe-received", "hs-pgphys-router-received", "pg-pair-haproxy-remote_write", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-pgphys-router-visible", "pg-pair-haproxy-remote_apply", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-pgphys-router-durable", "pg-pair-haproxy-on", "pg-pair-on"},
	{"1-safe", "hs-pgphys-router-cleartext-1safe", "pg-pair-haproxy-local", "pg-pair-local"},
	{"2-safe-received", "hs-pgphys-router-cleartext-received", "pg-pair-haproxy-remote_write", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-pgphys-router-cleartext-visible", "pg-pair-haproxy-remote_apply", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-pgphys-router-cleartext-durable", "pg-pair-haproxy-on", "pg-pair-on"},
	// Encrypted to the servers on both sides: tandem's router (TLS on its
	// hop, the default) against HAProxy's stack with its clients in TLS.
	{"1-safe", "hs-pgphys-router-1safe", "pg-pair-haproxy-tls-local", "pg-pair-local"},
	{"2-safe-received", "hs-pgphys-router-received", "pg-pair-haproxy-tls-remote_write", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-pgphys-router-visible", "pg-pair-haproxy-tls-remote_apply", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-pgphys-router-durable", "pg-pair-haproxy-tls-on", "pg-pair-on"},
	// With automatic failover, as the examples run (TLS on the hop).
	{"1-safe", "hs-pgphys-router-auto-1safe", "pg-pair-haproxy-local", "pg-pair-local"},
	{"2-safe-received", "hs-pgphys-router-auto-received", "pg-pair-haproxy-remote_write", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-pgphys-router-auto-visible", "pg-pair-haproxy-remote_apply", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-pgphys-router-auto-durable", "pg-pair-haproxy-on", "pg-pair-on"},
	{"1-safe", "hs-pgphys-router-auto-1safe", "pg-pair-haproxy-tls-local", "pg-pair-local"},
	{"2-safe-received", "hs-pgphys-router-auto-received", "pg-pair-haproxy-tls-remote_write", "pg-pair-remote_write"},
	{"2-safe-visible", "hs-pgphys-router-auto-visible", "pg-pair-haproxy-tls-remote_apply", "pg-pair-remote_apply"},
	{"2-safe-durable", "hs-pgphys-router-auto-durable", "pg-pair-haproxy-tls-on", "pg-pair-on"},
	// The same pair as single-master: the standby serves reads too.
	{"1-safe", "sm-pgphys-router-auto-1safe", "pg-pair-haproxy-local", "pg-pair-local"},
	{"2-safe-received", "sm-pgphys-router-auto-received", "pg-pair-haproxy-remote_write", "pg-pair-remote_write"},
	{"2-safe-visible", "sm-pgphys-router-auto-visible", "pg-pair-haproxy-remote_apply", "pg-pair-remote_apply"},
	{"2-safe-durable", "sm-pgphys-router-auto-durable", "pg-pair-haproxy-on", "pg-pair-on"},
	{"1-safe", "sm-pgphys-router-auto-1safe", "pg-pair-haproxy-tls-local", "pg-pair-local"},
	{"2-safe-received", "sm-pgphys-router-auto-received", "pg-pair-haproxy-tls-remote_write", "pg-pair-remote_write"},
	{"2-safe-visible", "sm-pgphys-router-auto-visible", "pg-pair-haproxy-tls-remote_apply", "pg-pair-remote_apply"},
	{"2-safe-durable", "sm-pgphys-router-auto-durable", "pg-pair-haproxy-tls-on", "pg-pair-on"},
}

// MinPhysicalVsDirect is issue 13's goal: tandem's physical pair keeps at
// least this share of PostgreSQL's own pair with clients connected directly.
const MinPhysicalVsDirect = 0.85

func configByName(name string) (Config, bool) {
	for _, c := range Configs() {
		if c.Name == name {
			return c, true
		}
	}
	return Config{}, false
}

func baselineOf(family string) string {
	if family == FamilyPostgres || family == FamilyTandemPG {
		return PostgresBaseline
	}
	return TandemBaseline
}
