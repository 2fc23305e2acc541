#!/usr/bin/env bash
# pgbench through the router of a hot-standby pair of managed PostgreSQL
# servers on the physical engine and on the writeset engine, and directly
# through a standalone managed node, at one safeness level: a first look at
# what the physical engine costs (not the sweep, which also runs
# HAProxy in front of PostgreSQL's own pair).
#
# usage: scripts/bench-physical.sh [SAFENESS] [CLIENTS] [SECONDS] [SCALE]
#   SAFENESS  default 2-safe-received; CLIENTS default 8; SECONDS default 20;
#   SCALE     pgbench -s, default 10
# env: TANDEM (default: tandem on PATH), PGBENCH (default: pgbench on PATH or
#      PostgreSQL's bin directory)
set -euo pipefail
SAFENESS=${1:-2-safe-received}
CLIENTS=${2:-8}
SECONDS_=${3:-20}
SCALE=${4:-10}
TANDEM=${TANDEM:-tandem}
PGBENCH=${PGBENCH:-$(command -v pgbench || echo "$(pg_config --bindir)/pgbench")}
WORK=${WORK:-$(mktemp -d)}
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
export PGPASSWORD=secret PGSSLMODE=disable

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cluster() { # NAME DESIGN ENGINE -> writes $WORK/NAME.toml, prints the router/node port
  local name=$1 design=$2 engine=$3 f=$WORK/$1.toml rp
  rp=$(port)
  {
    echo "cluster = \"$name\""; echo "design = \"$design\""; echo "run_dir = \"$WORK/$name\""; echo 'log_level = "warn"'
    if [ "$design" = hot-standby ]; then
      echo '[replication]'; echo "engine = \"$engine\""; echo "safeness = \"$SAFENESS\""
      echo '[router]'; echo "listen = \"127.0.0.1:$rp\""
    fi
    echo '[[users]]'; echo 'name = "tandem"'; echo 'password = "secret"'
    for n in n1 n2; do
      [ "$design" = standalone ] && [ $n = n2 ] && break
      local lp; lp=$(port); [ "$design" = standalone ] && lp=$rp
      echo '[[nodes]]'; echo "id = \"$n\""; echo "listen = \"127.0.0.1:$lp\""; echo "metrics = \"127.0.0.1:$(port)\""
      echo "repl_listen = \"127.0.0.1:$(port)\""; echo 'backend = "postgres"'
    done
  } >"$f"
  echo "$rp"
}

run() { # NAME DESIGN ENGINE
  local p; p=$(cluster "$1" "$2" "$3")
  "$TANDEM" up -c "$WORK/$1.toml" >"$WORK/$1.up" 2>&1 &
  local up=$!
  for _ in $(seq 1 240); do grep -q 'is up' "$WORK/$1.up" && break; sleep 0.5; done
  "$PGBENCH" -h 127.0.0.1 -p "$p" -U tandem -i -s "$SCALE" -q tandem >/dev/null 2>&1
  local rw ro
  rw=$("$PGBENCH" -h 127.0.0.1 -p "$p" -U tandem -c "$CLIENTS" -j 2 -T "$SECONDS_" -M prepared tandem 2>/dev/null | awk '/^tps/ {print $3; exit}')
  ro=$("$PGBENCH" -h 127.0.0.1 -p "$p" -U tandem -c "$CLIENTS" -j 2 -T "$SECONDS_" -M prepared -S tandem 2>/dev/null | awk '/^tps/ {print $3; exit}')
  kill -TERM $up; wait $up 2>/dev/null || true
  printf '%-28s tpcb-like %10s tps   select-only %10s tps\n' "$1" "$rw" "$ro"
}

echo "pgbench -s $SCALE, $CLIENTS clients, ${SECONDS_}s each, -M prepared; pairs at $SAFENESS"
run standalone standalone writeset
run physical-pair hot-standby physical
run writeset-pair hot-standby writeset
