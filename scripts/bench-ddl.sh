#!/usr/bin/env bash
# What a DDL costs a running hot-standby pair: TM1 runs through the router
# while three schema changes run on the same tables, each in a transaction
# block as a migration tool sends it:
#   add-column   ALTER TABLE subscriber ADD COLUMN note text DEFAULT 'n'
#   index        CREATE INDEX ON subscriber (msc_location)
#   migration    ALTER TABLE ADD COLUMN; UPDATE every row; CREATE INDEX on it
# For each: its time on the primary (BEGIN to COMMIT answered), the time until
# the standby has it (polled on the standby itself), and TM1's throughput
# while it ran against the run's median outside the DDL windows.
# Usage: scripts/bench-ddl.sh [backend sqlite|postgres] [P] [clients] [safeness]
# Needs python3 with psycopg (scripts/deps.d/clients.sh installs it).
set -euo pipefail
BACKEND=${1:-sqlite}; P=${2:-20000}; C=${3:-8}; SAFE=${4:-2-safe-visible}
T=${TANDEM:-$(pwd)/bin/tandem}
W=$(mktemp -d /tmp/tandem-bench-ddl.XXXXXX)
cleanup() { kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
RP=$(port); N1=$(port); N2=$(port)
cat > "$W/ddl.toml" <<TOML
cluster = "bench-ddl"
design = "hot-standby"
run_dir = "$W/run"
log_level = "warn"
[replication]
safeness = "$SAFE"
durability = "relaxed"
[router]
listen = "127.0.0.1:$RP"
[[users]]
name = "tandem"
password = "tandem"
[[nodes]]
id = "n1"
backend = "$BACKEND"
listen = "127.0.0.1:$N1"
metrics = "127.0.0.1:$(port)"
repl_listen = "127.0.0.1:$(port)"
[[nodes]]
id = "n2"
backend = "$BACKEND"
listen = "127.0.0.1:$N2"
metrics = "127.0.0.1:$(port)"
repl_listen = "127.0.0.1:$(port)"
TOML
"$T" up -c "$W/ddl.toml" > "$W/up.out" 2>&1 &
for i in $(seq 300); do grep -q "is up" "$W/up.out" 2>/dev/null && break; sleep 0.2; done
grep -q "is up" "$W/up.out" || { cat "$W/up.out"; exit 1; }
dsn() { echo "postgres://tandem:tandem@127.0.0.1:$1/tandem?sslmode=disable"; }
"$T" bench load --workload tm1 --subscribers "$P" --dsn "$(dsn $RP)" --quiet > /dev/null
DUR=48
"$T" bench run --workload tm1 --mix r20w80 --clients "$C" --rampup 2s --duration ${DUR}s \
  --dsn "$(dsn $RP)" --out "$W/run-out" --quiet > "$W/run.txt" 2>&1 &
BENCH=$!
python3 - "$(dsn $RP)" "$(dsn $N2)" "$W/ddl.json" <<'PY'
import json, sys, time
import psycopg
router, standby, out = sys.argv[1:4]
t0 = time.monotonic()
def at(s):
    time.sleep(max(0, s - (time.monotonic() - t0)))
cases = [
    ("add-column", ["ALTER TABLE subscriber ADD COLUMN note text DEFAULT 'n'"],
     "SELECT count(*) FROM information_schema.columns WHERE table_name = 'subscriber' AND column_name = 'note'"),
    ("index", ["CREATE INDEX subscriber_msc ON subscriber (msc_location)"],
     "SELECT count(*) FROM pg_indexes WHERE indexname = 'subscriber_msc'"),
    ("migration", ["ALTER TABLE subscriber ADD COLUMN tier int",
                   "UPDATE subscriber SET tier = s_id % 3",
                   "CREATE INDEX subscriber_tier ON subscriber (tier)"],
     "SELECT count(*) FROM pg_indexes WHERE indexname = 'subscriber_tier'"),
]
res = []
sb = psycopg.connect(standby, autocommit=True)
with psycopg.connect(router) as c:
    for i, (name, stmts, check) in enumerate(cases):
        at(12 + 12 * i)
        start = time.monotonic()
        with c.transaction():
            for s in stmts:
                c.execute(s)
        primary = time.monotonic()
        while sb.execute(check).fetchone()[0] != 1:
            time.sleep(0.002)
        done = time.monotonic()
        res.append({"case": name, "start_s": start - t0, "primary_ms": (primary - start) * 1e3,
                    "standby_ms": (done - start) * 1e3})
json.dump(res, open(out, "w"))
PY
wait $BENCH
python3 - "$W/ddl.json" "$W/run-out/timeline.csv" "$BACKEND" "$P" "$C" "$SAFE" <<'PY'
import csv, json, statistics, sys
cases = json.load(open(sys.argv[1]))
rows = [r for r in csv.DictReader(open(sys.argv[2]))]
pts = [(float(r["t_s"]), float(r["interval_s"]), float(r["tps"])) for r in rows if r["phase"] == "measure"]
# The DDL driver started about when the bench did (within the bench's
# start-up); a window is the DDL's span widened to whole timeline intervals.
def inside(p, c):
    end, iv, _ = p
    a, b = c["start_s"], c["start_s"] + c["standby_ms"] / 1e3
    return end > a and end - iv < b + 1e-9
outside = [p[2] for p in pts if not any(inside(p, c) for c in cases)]
base = statistics.median(outside)
print(f"backend {sys.argv[3]}, TM1 R20W80, P={sys.argv[4]}, {sys.argv[5]} clients, {sys.argv[6]}; TM1 median outside DDL {base:.0f} tps")
print(f"{'DDL':<12} {'primary ms':>11} {'standby has it ms':>18} {'TM1 during / median':>20}")
for c in cases:
    during = [p[2] for p in pts if inside(p, c)]
    ratio = statistics.mean(during) / base if during else float("nan")
    print(f"{c['case']:<12} {c['primary_ms']:>11.1f} {c['standby_ms']:>18.1f} {ratio:>20.2f}")
PY
grep -E "errors|unexpected" "$W/run.txt" | head -3 || true
