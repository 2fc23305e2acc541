#!/usr/bin/env bash
# TM1 (TATP) at P subscribers against three targets, for docs/benchmarks.md:
#   direct      PostgreSQL, no tandem
#   tandem-pg   the same PostgreSQL through a tandem node (relay)
#   tandem-sq   a tandem node on the embedded SQLite back end
# Each mix runs on each target in turn (alternating), then one comparison
# table per mix is printed (tandem bench compare).
# Usage: scripts/bench-tm1.sh [P] [duration] [clients]
set -euo pipefail
P=${1:-100000}; DUR=${2:-30s}; C=${3:-8}; RAMP=${RAMP:-5s}
T=${TANDEM:-$(pwd)/bin/tandem}
W=$(mktemp -d /tmp/tandem-bench-tm1.XXXXXX); OUT=${OUT:-$(pwd)/out/bench-tm1}
mkdir -p "$OUT"
cleanup() { kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PGN=$(port); SQN=$(port)
cat > "$W/pg.toml" <<TOML
cluster = "tm1-pg"
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
cluster = "tm1-sq"
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
echo "== loading $P subscribers (PostgreSQL, then SQLite through tandem)" >&2
"$T" bench load --workload tm1 --subscribers "$P" --dsn "$DIRECT" --drop
"$T" bench load --workload tm1 --subscribers "$P" --dsn "$TSQ" --drop
for mix in r80w20 r20w80; do
  for target in direct tandem-pg tandem-sq; do
    case $target in direct) D=$DIRECT;; tandem-pg) D=$TPG;; tandem-sq) D=$TSQ;; esac
    echo "== $mix on $target" >&2
    "$T" bench run --workload tm1 --dsn "$D" --mix "$mix" --clients "$C" --rampup "$RAMP" --duration "$DUR" --subscribers "$P" --out "$OUT/$mix-$target" > "$OUT/$mix-$target.txt"
  done
  echo "### $mix ($P subscribers, $C clients, $DUR measured after $RAMP ramp-up)"
  "$T" bench compare "$OUT/$mix-direct/result.json" "$OUT/$mix-tandem-pg/result.json" "$OUT/$mix-tandem-sq/result.json"
done
