#!/usr/bin/env bash
# TM1 on 1, 2 and 3 nodes of a single-master SQLite cluster on this one
# machine (issue 12): N=1 is a standalone node (its own front door, no
# router, no replication), N=2 and N=3 are a primary and N-1 replicas with
# the router in front, routing per transaction (reads to the replicas at the
# default `session` consistency, writes to the primary). Every process
# shares this machine's cores, so this is not scale-out: the emulated-host
# lab measures that. For each N the cluster starts fresh, loads P
# subscribers, then runs the mixes one after the other, R rounds.
# Usage: scripts/bench-singlemaster.sh [P] [duration] [clients] [rounds] [backend]
set -euo pipefail
P=${1:-10000}; DUR=${2:-15s}; C=${3:-8}; R=${4:-2}; BE=${5:-sqlite}
T=${TANDEM:-$(pwd)/bin/tandem}
W=$(mktemp -d /tmp/tandem-bench-sm.XXXXXX)
cleanup() { kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
conf() { # N -> writes $W/cN.toml, prints the client port
  local n=$1 cp; cp=$(port)
  if [ "$n" = 1 ]; then
    cat > "$W/c1.toml" <<TOML
cluster = "sm-1"
design = "standalone"
run_dir = "$W/run1"
log_level = "warn"
[[users]]
name = "tandem"
password = "tandem"
[[nodes]]
id = "n1"
listen = "127.0.0.1:$cp"
metrics = "127.0.0.1:$(port)"
backend = "$BE"
TOML
  else
    cat > "$W/c$n.toml" <<TOML
cluster = "sm-$n"
design = "single-master"
run_dir = "$W/run$n"
log_level = "warn"
[replication]
safeness = "2-safe-received"
ack = "one"
durability = "relaxed"
failover = "automatic"
[router]
listen = "127.0.0.1:$cp"
metrics = "127.0.0.1:$(port)"
policy = "least-connected"
[[users]]
name = "tandem"
password = "tandem"
TOML
    for i in $(seq "$n"); do
      cat >> "$W/c$n.toml" <<TOML
[[nodes]]
id = "n$i"
listen = "127.0.0.1:$(port)"
metrics = "127.0.0.1:$(port)"
repl_listen = "127.0.0.1:$(port)"
raft_listen = "127.0.0.1:$(port)"
backend = "$BE"
TOML
    done
    if [ "$n" = 2 ]; then printf '[witness]\nid = "w"\nraft_listen = "127.0.0.1:%s"\n' "$(port)" >> "$W/c$n.toml"; fi
  fi
  echo "$cp"
}
dsn() { echo "postgres://tandem:tandem@127.0.0.1:$1/tandem?sslmode=disable"; }
printf '%-3s %-10s %-6s %10s %10s %10s %8s\n' N mix round MQTh mean_ms p90_ms errors
for n in 1 2 3; do
  cp=$(conf "$n")
  "$T" up -c "$W/c$n.toml" > "$W/up$n.out" 2>&1 &
  up=$!
  for i in $(seq 300); do grep -q "is up\|Ctrl-C stops" "$W/up$n.out" 2>/dev/null && break; sleep 0.2; done
  "$T" bench load --workload tm1 --subscribers "$P" --dsn "$(dsn "$cp")" --quiet > /dev/null
  sleep 2
  for r in $(seq "$R"); do
    for mix in r80w20 read-only; do
      "$T" bench run --workload tm1 --dsn "$(dsn "$cp")" --mix "$mix" --clients "$C" --rampup 2s --duration "$DUR" --json 2>/dev/null \
        | python3 -c 'import json,sys; d=json.load(sys.stdin); t=d["totals"]; print("%-3s %-10s %-6s %10.1f %10.2f %10.2f %8d" % (sys.argv[1], sys.argv[2], sys.argv[3], d["mqth"], t["mean_ms"], t["p90_ms"], t["errors"]))' "$n" "$mix" "$r"
    done
  done
  kill -INT "$up" 2>/dev/null || true; wait "$up" 2>/dev/null || true
done
