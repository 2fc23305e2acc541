#!/usr/bin/env bash
# TPC-C at W warehouses (full TPC-C population) against three targets, for
# docs/benchmarks.md:
#   direct      PostgreSQL, no tandem
#   tandem-pg   the same PostgreSQL through a tandem node (relay)
#   tandem-sq   a tandem node on the embedded SQLite back end
# The targets take turns (R rounds, alternating); then one comparison table
# per round (tandem bench compare). Runs add orders, so later rounds run on a
# slightly larger database; every target grows the same way.
# Usage: scripts/bench-tpcc.sh [warehouses] [duration] [clients] [rounds]
# WORKLOAD=epinions runs Epinions instead (the first argument is then its
# scale: 2,000 users and 1,000 items each); WORKLOAD=tpcw (EBs) and
# WORKLOAD=rubis (units of 1,000 users) too. RUNARGS adds arguments to every
# `bench run`, e.g. RUNARGS="--think 0 --mix ordering".
set -euo pipefail
WH=${1:-2}; DUR=${2:-20s}; C=${3:-8}; R=${4:-2}; RAMP=${RAMP:-3s}; WL=${WORKLOAD:-tpcc}
T=${TANDEM:-$(pwd)/bin/tandem}
W=$(mktemp -d /tmp/tandem-bench-$WL.XXXXXX); OUT=${OUT:-$(pwd)/out/bench-$WL}
mkdir -p "$OUT"
cleanup() { kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PGN=$(port); SQN=$(port)
cat > "$W/pg.toml" <<TOML
cluster = "tpcc-pg"
auth = "trust"
run_dir = "$W/pg"
log_level = "warn"
[[nodes]]
id = "n1"
listen = "127.0.0.1:$PGN"
backend = "postgres"
[nodes.postgres]
settings = { max_connections = "100", shared_buffers = "'256MB'" }
TOML
cat > "$W/sq.toml" <<TOML
cluster = "tpcc-sq"
auth = "trust"
run_dir = "$W/sq"
log_level = "warn"
[[nodes]]
id = "n1"
listen = "127.0.0.1:$SQN"
backend = "sqlite"
TOML
"$T" up -c "$W/pg.toml" > "$W/pg.out" 2>&1 &
"$T" up -c "$W/sq.toml" > "$W/sq.out" 2>&1 &
for f in pg sq; do for i in $(seq 1 120); do grep -q "connect with" "$W/$f.out" 2>/dev/null && break; sleep 0.5; done; done
# The managed PostgreSQL listens on its Unix socket only.
PGPORT=$(sed -n 's/^port = //p' "$W/pg/n1/pgdata/tandem.conf")
DIRECT="postgres://postgres@/postgres?host=$W/pg/n1/pgdata&port=$PGPORT&sslmode=disable"
TPG="postgres://postgres@127.0.0.1:$PGN/postgres?sslmode=disable"
TSQ="postgres://tandem@127.0.0.1:$SQN/tandem?sslmode=disable"
echo "== loading $WL at scale $WH (PostgreSQL, then SQLite through tandem)" >&2
"$T" bench load --workload "$WL" --scale "$WH" --dsn "$DIRECT" --drop
"$T" bench load --workload "$WL" --scale "$WH" --dsn "$TSQ" --drop
for r in $(seq 1 "$R"); do
  for target in direct tandem-pg tandem-sq; do
    case $target in direct) D=$DIRECT;; tandem-pg) D=$TPG;; tandem-sq) D=$TSQ;; esac
    echo "== round $r on $target" >&2
    "$T" bench run --workload "$WL" --dsn "$D" --clients "$C" --rampup "$RAMP" --duration "$DUR" --quiet --out "$OUT/r$r-$target" ${RUNARGS:-} > "$OUT/r$r-$target.txt"
  done
  echo "### round $r ($WL, scale $WH, $C clients, $DUR measured after $RAMP ramp-up)"
  "$T" bench compare "$OUT/r$r-direct/result.json" "$OUT/r$r-tandem-pg/result.json" "$OUT/r$r-tandem-sq/result.json"
  grep -h "tpmC" "$OUT/r$r-direct.txt" "$OUT/r$r-tandem-pg.txt" "$OUT/r$r-tandem-sq.txt" | sed "s/^/round $r: /" || true
done
