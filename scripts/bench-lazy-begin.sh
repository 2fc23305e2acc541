#!/usr/bin/env bash
# Read-write transaction blocks that only read, on the SQLite back end:
# two tandem builds side by side (standalone nodes, pgbench scale 2),
# alternating 10 s runs of 8 clients doing BEGIN; two SELECTs by key;
# COMMIT. Prints each run's transactions/s.
# Usage: scripts/bench-lazy-begin.sh OLD_TANDEM NEW_TANDEM [ROUNDS] [pgbench script options]
#   e.g. MODE="-b tpcb-like" scripts/bench-lazy-begin.sh old new 2
set -euo pipefail
OLD=$1 NEW=$2 R=${3:-3}
W=$(mktemp -d /tmp/tandem-bench-lazy.XXXXXX)
cleanup() { kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$W"; }
trap cleanup EXIT
cat > "$W/ro_block.sql" <<'SQL'
\set aid random(1, 100000 * :scale)
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT bbalance FROM pgbench_branches WHERE bid = 1;
COMMIT;
SQL
MODE=${MODE:-"-f $W/ro_block.sql"}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A P
for name in old new; do
  bin=$OLD; [[ $name == new ]] && bin=$NEW
  P[$name]=$(port)
  cat > "$W/$name.toml" <<TOML
cluster = "lazy-$name"
auth = "trust"
run_dir = "$W/$name"
log_level = "warn"
[[nodes]]
id = "n1"
listen = "127.0.0.1:${P[$name]}"
backend = "sqlite"
TOML
  "$bin" up -c "$W/$name.toml" > "$W/$name.out" 2>&1 &
  for i in $(seq 100); do grep -q "is up" "$W/$name.out" 2>/dev/null && break; sleep 0.2; done
  pgbench -q -i -s 2 -h 127.0.0.1 -p "${P[$name]}" -U tandem tandem > /dev/null 2>&1
done
for r in $(seq "$R"); do
  for name in old new; do
    tps=$(pgbench -n -c 8 -j 2 -T 10 $MODE -h 127.0.0.1 -p "${P[$name]}" -U tandem tandem | grep -oP 'tps = \K[0-9.]+' | head -1)
    echo "round $r $name tps $tps"
  done
done
