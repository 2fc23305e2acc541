#!/bin/bash
# The TPC-C driver gap (issue 16) on one statement: pgx (as tandem's
# drivers used it with Go's network poller), pgx's pgconn layer, pgx
# waiting on each goroutine's own thread (`tandem bench run --wait thread`,
# its default up to 16 clients), and pgjdbc (BenchBase's driver), on
# the same prepared single-row SELECT against a scratch PostgreSQL (port
# 5499, table item of 100,000 rows), alternating, ROUNDS times.
#   scripts/experiments/drivers/run.sh [ROUNDS] [CONNS]
# JAR: pgjdbc (default: BenchBase's, /opt/benchbase/benchbase-postgres/lib).
set -euo pipefail
cd "$(dirname "$0")"
ROUNDS=${1:-3} CONNS=${2:-4}
JAR=${JAR:-$(ls /opt/benchbase/benchbase-postgres/lib/postgresql-*.jar | head -1)}
B=$(pg_config --bindir)
W=$(mktemp -d /tmp/drivers.XXXXXX); chmod 755 "$W"; chown postgres "$W"
trap 'runuser -u postgres -- "$B/pg_ctl" -D "$W/d" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
runuser -u postgres -- "$B/initdb" -D "$W/d" -A trust >/dev/null
runuser -u postgres -- "$B/pg_ctl" -D "$W/d" -l "$W/log" -w -o "-p 5499 -k $W -c listen_addresses=127.0.0.1 -c shared_buffers=256MB" start >/dev/null
"$B/psql" -qh 127.0.0.1 -p 5499 -U postgres -c "CREATE TABLE item (i_id int PRIMARY KEY, i_im_id int, i_name varchar(24), i_price decimal(5,2), i_data varchar(50))" \
  -c "INSERT INTO item SELECT g, g, md5(g::text)::varchar(24), (g % 9999) / 100.0, md5((g * 7)::text) FROM generate_series(1, 100000) g" -c "VACUUM ANALYZE item"
# -thread uses bench's own connection (bench/threadwait_linux.go), copied
# into a scratch build of this program.
mkdir "$W/src" && cp ./*.go go.mod go.sum "$W/src"
sed 's/^package bench$/package main/' ../../../bench/threadwait_linux.go > "$W/src/threadconn_linux.go"
(cd "$W/src" && go build -o "$W/drivers" .)
javac -d "$W" -cp "$JAR" Multi.java
for r in $(seq "$ROUNDS"); do
  echo "== round $r"
  "$W/drivers" -conns "$CONNS"
  "$W/drivers" -conns "$CONNS" -raw
  GOMAXPROCS=$((CONNS + 1)) "$W/drivers" -conns "$CONNS" -thread
  GOMAXPROCS=1 "$W/drivers" -conns "$CONNS" | sed 's/^pgx/pgx GOMAXPROCS=1/'
  java -cp "$JAR:$W" Multi 30000 "$CONNS" | tail -1
done
