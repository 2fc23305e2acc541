#!/usr/bin/env bash
# CPU per transaction of a three-node multi-master SQLite cluster (issue 15,
# docs/benchmarks.md "The certifier's Raft log"), alternating builds:
#   scripts/bench-mm-cpu.sh ROUNDS BIN...      e.g. 3 /tmp/tandem-main ./tandem
# Each run: a fresh cluster (`tandem up`, examples/multi-master-sqlite.toml
# with its own run_dir and ports PORT0..PORT9 and 1PORT), TM1 at 10,000
# subscribers loaded through n1, then R80W20 through the router for
# DURATION with CLIENTS clients thinking THINK; the node processes'
# utime+stime (/proc/<pid>/stat) over the run, divided by the transactions
# run (result.json totals.attempts) and by the certified writesets (n1's
# tandem_coord_cert_decisions_total{outcome="commit"}). Prints one line per
# run. Env: CLIENTS (24), THINK (20ms), DURATION (30s), PORT (1577), OUT
# (a temporary directory).
set -euo pipefail
ROUNDS=$1; shift
C=${CLIENTS:-24}; THINK=${THINK:-20ms}; D=${DURATION:-30s}; P=${PORT:-1577}
OUT=${OUT:-$(mktemp -d)}
TCK=$(getconf CLK_TCK)

cluster() { # label
  cat > "$OUT/$1.toml" <<T
cluster = "mm-cpu-$1"
design  = "multi-master"
run_dir = "$OUT/run-$1"
[router]
listen  = "127.0.0.1:${P}0"
metrics = "127.0.0.1:${P}9"
[[users]]
name     = "tandem"
password = "tandem"
[[nodes]]
id = "n1"
listen = "127.0.0.1:${P}1"
metrics = "127.0.0.1:${P}4"
raft_listen = "127.0.0.1:${P}7"
backend = "sqlite"
[[nodes]]
id = "n2"
listen = "127.0.0.1:${P}2"
metrics = "127.0.0.1:${P}5"
raft_listen = "127.0.0.1:${P}8"
backend = "sqlite"
[[nodes]]
id = "n3"
listen = "127.0.0.1:${P}3"
metrics = "127.0.0.1:${P}6"
raft_listen = "127.0.0.1:1${P}"
backend = "sqlite"
T
}

run() { # bin label
  local bin=$1 l=$2 up pids c0 c1 k0 k1
  cluster "$l"
  "$bin" up -c "$OUT/$l.toml" > "$OUT/up-$l.log" 2>&1 &
  up=$!
  for _ in $(seq 1 120); do grep -q "is up" "$OUT/up-$l.log" && break; sleep 0.5; done
  grep -q "is up" "$OUT/up-$l.log" || { echo "$l: the cluster did not come up: $OUT/up-$l.log"; kill "$up"; return 1; }
  "$bin" bench load --dsn "postgres://tandem:tandem@127.0.0.1:${P}1/tandem?sslmode=disable" --workload tm1 --subscribers 10000 --quiet > /dev/null
  sleep 3
  pids=$(python3 -c "import json;print(' '.join(str(p['pid']) for p in json.load(open('$OUT/run-$l/cluster.json'))['procs'] if p['kind']=='node'))")
  cpu() { local s=0 p; for p in $pids; do s=$((s + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $s; }
  certs() { curl -s "http://127.0.0.1:${P}4/metrics" | awk '/^tandem_coord_cert_decisions_total\{outcome="commit"\}/{print $2}'; }
  c0=$(cpu); k0=$(certs); local la=$(cut -d' ' -f1 /proc/loadavg)
  "$bin" bench run --dsn "postgres://tandem:tandem@127.0.0.1:${P}0/tandem?sslmode=disable" --workload tm1 --mix r80w20 \
    --clients "$C" --think "$THINK" --duration "$D" --rampup 0s --out "$OUT/res-$l" > "$OUT/bench-$l.log" 2>&1
  c1=$(cpu); k1=$(certs)
  kill "$up"; wait "$up" || true
  python3 - <<PY
import json
r = json.load(open("$OUT/res-$l/result.json"))
cpu = ($c1 - $c0) / $TCK
tx = r["totals"]["attempts"]
certs = float("$k1") - float("$k0")
print("%-12s tx/s %6.0f  node CPU %.2f s  ms/tx %.3f  ms/cert %.3f  load %s" % ("$l", r["mqth"], cpu, 1000 * cpu / tx, 1000 * cpu / max(certs, 1), "$la"))
PY
}

for r in $(seq 1 "$ROUNDS"); do
  i=0
  for b in "$@"; do
    i=$((i + 1))
    run "$b" "b$i-r$r"
  done
done
echo "files in $OUT"
