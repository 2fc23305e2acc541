#!/usr/bin/env bash
# What a multi-master update costs the nodes on managed PostgreSQL: a fresh
# three-node cluster (examples/multi-master-postgres.toml on other ports)
# per run, TM1 at 10,000 subscribers loaded through n1, then 8 clients on n1
# running TM1's four update transactions for 15 s; the CPU each node's
# tandem process and its PostgreSQL tree used, from /proc. With two
# binaries the runs alternate (A B, then B A, ...).
#
#   scripts/experiments/mm-update-cost/run.sh ROUNDS BINARY [BINARY2]
#
# Root (PostgreSQL runs as the postgres user); ports 5670-5673, 8671-8673,
# 9670-9673; everything in a temporary directory, removed at the end.
set -euo pipefail
rounds=${1:?rounds} a=${2:?tandem binary} b=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
dir=$(mktemp -d /tmp/mm-update-cost.XXXXXX)
chmod 755 "$dir"
cleanup() { [ -n "${up:-}" ] && kill -INT "$up" 2>/dev/null && wait "$up" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
sed -e "s#run_dir = \".tandem/multi-master-postgres\"#run_dir = \"$dir/run\"#" -e 's/547/567/g; s/947/967/g; s/847/867/g' \
  "$repo/examples/multi-master-postgres.toml" > "$dir/c.toml"
cat > "$dir/cpu.py" <<'PY'
import os, sys, subprocess
HZ = os.sysconf('SC_CLK_TCK')
def stat(pid):
    s = open(f'/proc/{pid}/stat').read(); s = s[s.rindex(')') + 2:].split()
    return int(s[11]) + int(s[12]), int(s[13]) + int(s[14])  # own, reaped children
def children(pid):
    out = []
    for t in os.listdir(f'/proc/{pid}/task'):
        try: out += [int(x) for x in open(f'/proc/{pid}/task/{t}/children').read().split()]
        except OSError: pass
    return out
def tree(pid):
    tot, st = 0, [pid]
    while st:
        p = st.pop()
        try:
            own, reaped = stat(p); tot += own + reaped; st += children(p)
        except OSError: pass
    return tot
nodes = dict((k, int(v)) for k, v in (x.split('=') for x in sys.argv[1].split(',')))
def snap(): return {n: (stat(p)[0], sum(tree(c) for c in children(p))) for n, p in nodes.items()}
a = snap(); subprocess.run(sys.argv[2:]); b = snap()
for n in nodes:
    print(f'{n}: tandem {(b[n][0]-a[n][0])/HZ:.2f} s CPU, its PostgreSQL {(b[n][1]-a[n][1])/HZ:.2f} s')
PY
dsn="postgres://tandem:tandem@127.0.0.1:5671/tandem?sslmode=disable"
run() { # binary
  local t=$1
  rm -rf "$dir/run"
  "$t" up -c "$dir/c.toml" > "$dir/up.log" 2>&1 & up=$!
  for _ in $(seq 90); do grep -q "Ctrl-C stops" "$dir/up.log" && break; sleep 1; done
  "$t" bench load --dsn "$dsn" --workload tm1 --scale 10000 > /dev/null 2>&1
  pids=$(pgrep -f "node -c $dir/c.toml" | tr '\n' ' '); set -- $pids
  python3 "$dir/cpu.py" "n1=$1,n2=$2,n3=$3" "$t" bench run --dsn "$dsn" --workload tm1 --scale 10000 --mix custom \
    --weights UPDATE_SUBSCRIBER_DATA=2,UPDATE_LOCATION=14,INSERT_CALL_FORWARDING=2,DELETE_CALL_FORWARDING=2 \
    --clients 8 --duration 15s --rampup 2s --quiet | grep -E "MQTh|TOTAL|: tandem"
  kill -INT "$up"; wait "$up" || true; up=
}
for r in $(seq "$rounds"); do
  order="$a"; [ -n "$b" ] && { if [ $((r % 2)) = 1 ]; then order="$a $b"; else order="$b $a"; fi; }
  for bin in $order; do
    echo "== round $r: $bin ($(date -u +%T), load average $(cut -d' ' -f1 /proc/loadavg))"
    run "$bin"
  done
done
