#!/usr/bin/env bash
# What TLS between tandem's processes costs: TM1 through the router of a
# hot-standby SQLite pair with mutual TLS on every inter-node channel (the
# default: router -> node hop and replication stream) against the same pair
# with security.inter_node = "none". Both clusters run side by side; runs
# alternate, R rounds; prints the MQTh ratio per round and the median, and
# the CPU time tandem's processes (router and both nodes) spent per
# committed write transaction (the primary's tandem_repl_commits_total):
# on a shared machine that figure moves far less than throughput does.
# Each round also prints that figure per process (router, each node), which
# shows where a difference lies.
# PARALLEL=1 runs both clusters' loads at the same time instead of one
# after the other.
# Usage: scripts/bench-tls.sh [P] [duration] [clients] [rounds] [mix]
set -euo pipefail
P=${1:-20000}; DUR=${2:-15s}; C=${3:-8}; R=${4:-3}; MIX=${5:-r20w80}
T=${TANDEM:-$(pwd)/bin/tandem}
W=$(mktemp -d /tmp/tandem-bench-tls.XXXXXX)
cleanup() { kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # name router-port inter_node
  cat > "$W/$1.toml" <<TOML
cluster = "tls-$1"
design = "hot-standby"
run_dir = "$W/$1"
log_level = "warn"
[replication]
safeness = "2-safe-received"
durability = "relaxed"
[security]
inter_node = "$3"
[router]
listen = "127.0.0.1:$2"
[[users]]
name = "tandem"
password = "tandem"
[[nodes]]
id = "n1"
listen = "127.0.0.1:$(port)"
metrics = "127.0.0.1:$4"
repl_listen = "127.0.0.1:$(port)"
[[nodes]]
id = "n2"
listen = "127.0.0.1:$(port)"
metrics = "127.0.0.1:$(port)"
repl_listen = "127.0.0.1:$(port)"
TOML
  "$T" up -c "$W/$1.toml" > "$W/$1.out" 2>&1 &
  for i in $(seq 150); do grep -q "is up" "$W/$1.out" 2>/dev/null && return; sleep 0.2; done
  cat "$W/$1.out"; exit 1
}
TLS=$(port); CLEAR=$(port); TLSM=$(port); CLEARM=$(port)
start tls "$TLS" mtls "$TLSM"
start clear "$CLEAR" none "$CLEARM"
# CPU ticks (utime + stime) of a cluster's processes, and its primary's
# committed writesets.
ticks() { local t=0 p; for p in $(pgrep -f "$W/$1.toml"); do t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0))); done; echo $t; }
# Per process: "NAME=TICKS ..." (NAME router or the node id).
pticks() { local p out="" n; for p in $(pgrep -f "$W/$1.toml"); do
  n=$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | awk '{print ($2 == "node" ? $6 : $2)}')
  [ "$n" = up ] && continue
  out="$out $n=$(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)"; done; echo $out; }
commits() { curl -s "http://127.0.0.1:$1/metrics" | awk '$1 == "tandem_repl_commits_total" {print $2}'; }
declare -A metricsport=([tls]=$TLSM [clear]=$CLEARM)
HZ=$(getconf CLK_TCK)
dsn() { echo "postgres://tandem:tandem@127.0.0.1:$1/tandem?sslmode=disable"; }
for t in tls:$TLS clear:$CLEAR; do
  "$T" bench load --workload tm1 --subscribers "$P" --dsn "$(dsn ${t#*:})" --quiet > /dev/null
done
ratios=(); cratios=()
begin() { t0[$1]=$(ticks "$1"); p0[$1]=$(pticks "$1"); c0[$1]=$(commits "${metricsport[$1]}"); }
run() { # name port round
  "$T" bench run --workload tm1 --mix "$MIX" --clients "$C" --rampup 3s --duration "$DUR" \
    --dsn "$(dsn $2)" --json > "$W/$1-$3.json" 2>/dev/null
}
finish() { # name round
  local n=$1 t1 p1 c1
  mqth[$n]=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("mqth") or d.get("MQTh") or d["summary"]["mqth"])' "$W/$n-$2.json")
  t1=$(ticks "$n"); p1=$(pticks "$n"); c1=$(commits "${metricsport[$n]}")
  cpu[$n]=$(python3 -c "print(round(($t1 - ${t0[$n]}) / $HZ * 1e6 / max(1, float('$c1') - float('${c0[$n]}')), 1))")
  split[$n]=$(python3 -c "
import sys
a = dict(kv.split('=') for kv in sys.argv[1].split())
b = dict(kv.split('=') for kv in sys.argv[2].split())
c = max(1, float(sys.argv[3]) - float(sys.argv[4]))
print(' '.join(f'{k} {round((int(b[k]) - int(a[k])) / $HZ * 1e6 / c, 1)}' for k in sorted(b) if k in a))" "${p0[$n]}" "$p1" "$c1" "${c0[$n]}")
}
declare -A mqth cpu split t0 p0 c0
for r in $(seq "$R"); do
  if [ "${PARALLEL:-0}" = 1 ]; then
    # Both clusters under load at once: the same machine conditions for
    # both (the throughput ratio then shows the CPU cost directly).
    begin tls; begin clear
    run tls "$TLS" "$r" & a=$!
    run clear "$CLEAR" "$r" & b=$!
    wait $a; wait $b
    finish tls "$r"; finish clear "$r"
  else
    order="tls:$TLS clear:$CLEAR"
    [ $((r % 2)) -eq 0 ] && order="clear:$CLEAR tls:$TLS"
    for t in $order; do
      begin "${t%%:*}"; run "${t%%:*}" "${t#*:}" "$r"; finish "${t%%:*}" "$r"
    done
  fi
  ratio=$(python3 -c "print(round(${mqth[tls]}/${mqth[clear]}, 3))")
  cratio=$(python3 -c "print(round(${cpu[tls]}/${cpu[clear]}, 3))")
  ratios+=("$ratio"); cratios+=("$cratio")
  echo "round $r: mutual TLS ${mqth[tls]} MQTh ${cpu[tls]} us CPU/commit, clear text ${mqth[clear]} MQTh ${cpu[clear]} us CPU/commit; throughput ratio $ratio, CPU ratio $cratio"
  echo "  us CPU/commit per process: mutual TLS: ${split[tls]}; clear text: ${split[clear]}"
done
python3 -c "import statistics,sys; print('median throughput ratio (TLS / clear text):', statistics.median(map(float, sys.argv[1:])))" "${ratios[@]}"
python3 -c "import statistics,sys; print('median CPU-per-commit ratio (TLS / clear text):', statistics.median(map(float, sys.argv[1:])))" "${cratios[@]}"
