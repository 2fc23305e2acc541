#!/usr/bin/env bash
# Statements with their values as literals (the simple query protocol, as
# psql, scripts and drivers that interpolate values send them), on the
# SQLite back end: two tandem builds side by side (standalone nodes, TPC-C
# with 2 warehouses each), alternating runs of 4 clients, each build with
# prepared statements and with the simple protocol. Prints each run's
# transactions/s. On the simple protocol every statement is new text, so
# tandem translates each one (PostgreSQL's parser, the dialect rewrite,
# deparse); with prepared statements the translation is cached.
# Usage: scripts/bench-simple-protocol.sh OLD_TANDEM NEW_TANDEM [ROUNDS] [DURATION]
set -euo pipefail
OLD=$1 NEW=$2 R=${3:-3} D=${4:-8s}
W=$(mktemp -d /tmp/tandem-bench-simple.XXXXXX)
cleanup() { kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A DSN
for name in old new; do
  bin=$OLD; [[ $name == new ]] && bin=$NEW
  p=$(port)
  cat > "$W/$name.toml" <<TOML
cluster = "simple-$name"
auth = "trust"
run_dir = "$W/$name"
log_level = "warn"
[[nodes]]
id = "n1"
listen = "127.0.0.1:$p"
backend = "sqlite"
TOML
  "$bin" up -c "$W/$name.toml" > "$W/$name.out" 2>&1 &
  for i in $(seq 100); do grep -q "is up" "$W/$name.out" 2>/dev/null && break; sleep 0.2; done
  DSN[$name]="postgres://tandem@127.0.0.1:$p/tandem?sslmode=disable"
  "$NEW" bench load --workload tpcc --scale 2 --dsn "${DSN[$name]}" > /dev/null 2>&1
done
for r in $(seq "$R"); do
  for name in old new; do
    for proto in prepared simple; do
      flag=""; [[ $proto == simple ]] && flag="--simple"
      tps=$("$NEW" bench run --workload tpcc --scale 2 --clients 4 --rampup 1s --duration "$D" --seed 7 $flag \
        --dsn "${DSN[$name]}" --json 2>/dev/null | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["total_tps"], 1))')
      echo "round $r $name $proto tps $tps"
    done
  done
done
