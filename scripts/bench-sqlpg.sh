#!/usr/bin/env bash
# The cost of the PostgreSQL dialect layer on the SQLite back end: TM1
# through a tandem node that translates every statement (the default)
# against a node that sends TM1's statements to SQLite untranslated
# (TANDEM_SQLITE_TRANSLATE=off; TM1's SQL is valid SQLite too). Runs
# alternate, R rounds; prints the MQTh ratio per round and the median.
# Usage: scripts/bench-sqlpg.sh [P] [duration] [clients] [rounds] [mix]
set -euo pipefail
P=${1:-20000}; DUR=${2:-15s}; C=${3:-8}; R=${4:-3}; MIX=${5:-r80w20}
T=${TANDEM:-$(pwd)/bin/tandem}
W=$(mktemp -d /tmp/tandem-bench-sqlpg.XXXXXX)
cleanup() { kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # name port [env]
  cat > "$W/$1.toml" <<TOML
cluster = "sqlpg-$1"
auth = "trust"
run_dir = "$W/$1"
log_level = "warn"
[[nodes]]
id = "n1"
listen = "127.0.0.1:$2"
backend = "sqlite"
TOML
  env $3 "$T" up -c "$W/$1.toml" > "$W/$1.out" 2>&1 &
  for i in $(seq 100); do grep -q "is up" "$W/$1.out" 2>/dev/null && return; sleep 0.2; done
  cat "$W/$1.out"; exit 1
}
ON=$(port); OFF=$(port)
start on "$ON" "TANDEM_SQLITE_TRANSLATE=on"
start off "$OFF" "TANDEM_SQLITE_TRANSLATE=off"
for t in on:$ON off:$OFF; do
  "$T" bench load --workload tm1 --subscribers "$P" --dsn "postgres://tandem@127.0.0.1:${t#*:}/tandem?sslmode=disable" > /dev/null
done
ratios=()
for r in $(seq "$R"); do
  declare -A mqth
  for t in on:$ON off:$OFF; do
    "$T" bench run --workload tm1 --mix "$MIX" --clients "$C" --rampup 3s --duration "$DUR" \
      --dsn "postgres://tandem@127.0.0.1:${t#*:}/tandem?sslmode=disable" --json > "$W/${t%%:*}-$r.json" 2>/dev/null
    mqth[${t%%:*}]=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("mqth") or d.get("MQTh") or d["summary"]["mqth"])' "$W/${t%%:*}-$r.json")
  done
  ratio=$(python3 -c "print(round(${mqth[on]}/${mqth[off]}, 3))")
  ratios+=("$ratio")
  echo "round $r: translated ${mqth[on]} MQTh, untranslated ${mqth[off]} MQTh, ratio $ratio"
done
python3 -c "import statistics,sys; print('median ratio (translated / untranslated):', statistics.median(map(float, sys.argv[1:])))" "${ratios[@]}"
