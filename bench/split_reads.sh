#!/bin/sh
# The router's cost for routed reads (issue 12): pgbench -S through the
# router with transaction routing (the standby of a hot-standby pair with
# [router] split = true serves the reads) against the same pgbench
# through the router's plain relay hop to that standby (its read port: the
# issue-2 hop, client -> router -> node, no routing), and connected to the
# standby node directly (no hop at all), alternating, same run.
#
# usage: bench/split_reads.sh [BACKEND=sqlite|postgres] [SECONDS=10] [ROUNDS=3] [CLIENTS=8] [SCALE=10]
# INTER_NODE=none runs the router -> node hop in clear text (loopback).
# needs ./bin/tandem (make build) and pgbench.
set -eu
BACKEND=${1:-postgres}
SECS=${2:-10}
ROUNDS=${3:-3}
CLIENTS=${4:-8}
SCALE=${5:-10}
BIN=${TANDEM:-./bin/tandem}
dir=$(mktemp -d /tmp/tandem-split-XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
R=$(port); RR=$(port)
cat > "$dir/c.toml" <<EOT
cluster = "split"
design = "hot-standby"
run_dir = "$dir/run"
[replication]
safeness = "2-safe-received"
durability = "relaxed"
[router]
listen = "127.0.0.1:$R"
read_listen = "127.0.0.1:$RR"
split = true
[[users]]
name = "tandem"
password = "secret"
[security]
inter_node = "${INTER_NODE:-mtls}"
EOT
for n in n1 n2; do
  eval "P_$n=$(port)"
  cat >> "$dir/c.toml" <<EOT
[[nodes]]
id = "$n"
listen = "127.0.0.1:$(eval echo \$P_$n)"
metrics = "127.0.0.1:$(port)"
repl_listen = "127.0.0.1:$(port)"
backend = "$BACKEND"
EOT
  # The primary takes no reads: every routed read goes to the replica.
  [ "$n" = n1 ] && echo 'read_weight = 0' >> "$dir/c.toml"
  if [ "$BACKEND" = postgres ]; then
    printf '[nodes.postgres]\nsettings = { fsync = "off", max_connections = "100" }\n' >> "$dir/c.toml"
  fi
done
"$BIN" up -c "$dir/c.toml" > "$dir/up.log" 2>&1 &
UP=$!
trap 'kill $UP 2>/dev/null; wait $UP 2>/dev/null; rm -rf "$dir"' EXIT
i=0
until grep -q 'psql "' "$dir/up.log"; do
  i=$((i+1)); [ $i -gt 600 ] && { cat "$dir/up.log"; exit 1; }
  sleep 0.2
done
export PGPASSWORD=secret
ROUTER="host=127.0.0.1 port=$R user=tandem dbname=tandem sslmode=disable"
DIRECT="host=127.0.0.1 port=$P_n2 user=tandem dbname=tandem sslmode=disable"
HOP="host=127.0.0.1 port=$RR user=tandem dbname=tandem sslmode=disable"
pgbench -i -s "$SCALE" -I dtgp -q "$ROUTER" > "$dir/init.log" 2>&1 || { cat "$dir/init.log"; exit 1; }
want=$((SCALE * 100000))
until [ "$(psql -Atc 'select count(*) from pgbench_accounts' "$DIRECT" 2>/dev/null)" = "$want" ]; do sleep 0.5; done
echo "backend $BACKEND, inter_node ${INTER_NODE:-mtls}, pgbench -S -M prepared, $CLIENTS clients, scale $SCALE, $SECS s per run, $ROUNDS rounds"
# CPU time (µs) the router process and the replica's node process spent
# per transaction: on a shared machine it moves far less than tps does.
RPID=$(pgrep -f "tandem router -c $dir/c.toml" | head -1)
NPID=$(pgrep -f "tandem node -c $dir/c.toml --id n2" | head -1)
HZ=$(getconf CLK_TCK)
P1PID=$(pgrep -f "tandem node -c $dir/c.toml --id n1" | head -1)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "round path tps router_us_per_tx replica_us_per_tx primary_us_per_tx"
for r in $(seq "$ROUNDS"); do
  # The order rotates per round: the first path of a round ran slower in
  # most rounds whichever it was (docs/benchmarks.md, "Routed reads").
  case $((r % 3)) in 1) order="router hop direct";; 2) order="hop direct router";; 0) order="direct router hop";; esac
  for path in $order; do
    dsn=$ROUTER; [ $path = direct ] && dsn=$DIRECT; [ $path = hop ] && dsn=$HOP
    r0=$(ticks "$RPID"); n0=$(ticks "$NPID"); p0=$(ticks "$P1PID")
    out=$(pgbench -S -M prepared -n -c "$CLIENTS" -j 2 -T "$SECS" "$dsn" 2>/dev/null)
    r1=$(ticks "$RPID"); n1=$(ticks "$NPID"); p1=$(ticks "$P1PID")
    tps=$(echo "$out" | awk '/^tps/ {print int($3)}')
    txs=$(echo "$out" | awk '/actually processed/ {split($NF, a, "/"); print a[1]}')
    echo "$r $path $tps $(( (r1 - r0) * 1000000 / HZ / txs )) $(( (n1 - n0) * 1000000 / HZ / txs )) $(( (p1 - p0) * 1000000 / HZ / txs ))"
  done
done
# Where the router's reads went (the standby answers SHOW tandem.node).
# (SHOW tandem.node is answered by tandem's executor: SQLite nodes only.)
if [ "$BACKEND" = sqlite ]; then
  echo "a routed read ran on: $(psql -Atc "select current_setting('tandem.node')" "$ROUTER"); the read port's session on: $(psql -Atc "select current_setting('tandem.node')" "$HOP")"
fi
