#!/usr/bin/env bash
# tandem's TPC-C and Epinions drivers next to BenchBase (seed 001's
# OLTPBenchmark), same scale, terminals, mix and isolation, in the same run:
#   bb     BenchBase (JDBC, pgjdbc)       on a target
#   td     tandem bench run (pgx)         on the same target
# Targets (TARGETS, default "direct tandem-pg"):
#   direct     a PostgreSQL server started here (TCP on 127.0.0.1; BenchBase's
#              JDBC cannot reach the managed server's Unix socket)
#   tandem-pg  the same server through a tandem node (relay, external DSN)
# Per workload: each driver loads its own database once (bb: BenchBase's
# loader, td: tandem bench load), then R rounds run bb and td back to back on
# every target (odd rounds bb first, even rounds td first). Reported per
# round: throughput (all finished transactions / s),
# goodput (committed / s), tpmC for TPC-C, and the ratio td / bb.
#
# Usage: scripts/bench-benchbase.sh [warehouses] [seconds] [terminals] [rounds]
# WORKLOADS="tpcc epinions" (default), EP_SCALE=1 (Epinions: 2,000 users and
# 1,000 items per unit), RAMP=5 (seconds, warm-up not counted by either),
# ISOLATION=TRANSACTION_READ_COMMITTED (BenchBase's; tandem's drivers use the
# server's default, READ COMMITTED on PostgreSQL). PGSS=1 loads
# pg_stat_statements and writes, per run, what the server executed for that
# driver (calls, time per statement) next to its results (*.pgss).
# Each driver's CPU time (GNU time, when installed) goes to *.cpu and into
# the summary as CPU per transaction.
# LOAD_TARGET=direct (default) or tandem-pg: where both loaders write.
# TD_ARGS: more flags for tandem bench run (e.g. "--procs 2").
# SWAP_DB=1: after the loads, each driver runs on the other's database
# (BenchBase on td, tandem's driver on bb): whether a difference is the
# data and schema a loader made or the driver.
# TD2_ARGS: when set, tandem's driver runs a second time in every round
# with these flags instead (e.g. "--wait poller"), as "td2": two settings of
# tandem's driver against the same BenchBase runs. The three runs of a
# round rotate their order (bb td td2, td td2 bb, td2 bb td).
# The server's CPU per transaction (all PostgreSQL processes, /proc) is in
# the summary for every run; PERF=1 (perf installed) adds a profile of the
# server's CPU by symbol for each run (*.perf).
# HOSTS="server=0.8,driver=0.8" (root, cgroup v1 cpu controller or v2):
# emulated hosts, as tandem's lab: the PostgreSQL server (every process of
# it) runs under a CPU quota of its own, and each measured driver run under
# another, so the drivers no longer share the server's cores: the
# comparison is then whether a driver can drive the server, not how little
# CPU it leaves it. Loads run without quotas.
# NOFK=1 drops the foreign keys BenchBase's schema declares (TPC-C's) after
# its load: tandem's schema declares none, so without them both drivers ask
# the server for the same work per transaction; with them BenchBase's
# transactions also pay the server's foreign-key checks.
# BENCHBASE=/opt/benchbase/benchbase-postgres: an unpacked
# benchbase-postgres.tgz (see docs/benchmarks.md for the build). Without it the
# script says how to build it and exits 0: CI does not build BenchBase.
set -euo pipefail
WH=${1:-2}; DUR=${2:-30}; TERM_N=${3:-4}; R=${4:-2}; RAMP=${RAMP:-5}
WORKLOADS=${WORKLOADS:-tpcc epinions}; EP_SCALE=${EP_SCALE:-1}
TARGETS=${TARGETS:-direct tandem-pg}; LOAD_TARGET=${LOAD_TARGET:-direct}
ISOLATION=${ISOLATION:-TRANSACTION_READ_COMMITTED}
BB=${BENCHBASE:-/opt/benchbase/benchbase-postgres}
T=${TANDEM:-$(pwd)/bin/tandem}
OUT=${OUT:-$(pwd)/out/bench-benchbase}

if [ ! -f "$BB/benchbase.jar" ] || ! command -v java >/dev/null; then
  cat >&2 <<EOF
bench-benchbase: SKIPPED: BenchBase is not built (no $BB/benchbase.jar) or java is missing.
Build it (JDK 17+ and Maven; BenchBase's pom asks for Java 23, see docs/benchmarks.md for the one-line patch on 17):
  git clone https://github.com/cmu-db/benchbase /tmp/benchbase && cd /tmp/benchbase
  ./mvnw clean package -P postgres -DskipTests
  mkdir -p /opt/benchbase && tar xzf target/benchbase-postgres.tgz -C /opt/benchbase
or point BENCHBASE at an unpacked benchbase-postgres directory.
EOF
  exit 0
fi
PGBIN=${PGBIN:-$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)}
[ -x "$T" ] || { echo "bench-benchbase: no tandem binary at $T (make build)" >&2; exit 1; }

W=$(mktemp -d /tmp/tandem-bench-bb.XXXXXX); chmod 755 "$W"
# Emulated hosts (HOSTS): one cgroup per host under the cpu controller.
CG=""; CGV=""; declare -A CGQ=()
if [ -n "${HOSTS:-}" ]; then
  for kv in ${HOSTS//,/ }; do CGQ[${kv%%=*}]=${kv#*=}; done
  [ -n "${CGQ[server]:-}" ] && [ -n "${CGQ[driver]:-}" ] || { echo "bench-benchbase: HOSTS needs server=CORES,driver=CORES (got $HOSTS)" >&2; exit 1; }
  [ "$(id -u)" = 0 ] || { echo "bench-benchbase: HOSTS needs root (cgroups)" >&2; exit 1; }
  if [ -w /sys/fs/cgroup/cpu/cgroup.procs ]; then CG=/sys/fs/cgroup/cpu/tandem-bb-$$; CGV=1
  elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then CG=/sys/fs/cgroup/tandem-bb-$$; CGV=2
  else echo "bench-benchbase: HOSTS: no writable cgroup cpu controller" >&2; exit 1; fi
  for h in server driver; do
    mkdir -p "$CG/$h"
    q=$(python3 -c "print(int(${CGQ[$h]} * 100000))")
    if [ $CGV = 1 ]; then echo 100000 > "$CG/$h/cpu.cfs_period_us"; echo "$q" > "$CG/$h/cpu.cfs_quota_us"
    else echo "$q 100000" > "$CG/$h/cpu.max"; fi
  done
fi
# srvstat: the server host's "nr_periods nr_throttled" (cpu.stat, v1 and v2);
# nothing without HOSTS. Saved around each run in DIR.srv, so the summary can
# say in how many 100 ms periods the server hit its quota.
srvstat() { [ -n "$CG" ] && awk '$1=="nr_periods"{p=$2} $1=="nr_throttled"{t=$2} END{print p, t}' "$CG/server/cpu.stat"; }
# srvcpu: the PostgreSQL server's CPU seconds so far (user + system): the
# postmaster's own and its reaped children's (cutime, cstime: every backend
# that has exited) plus every live child's. Read before and after each run
# (the run's backends have exited by then), saved in DIR.scpu, so the summary
# can give the server's CPU per transaction for each driver.
srvcpu() {
  local pm; pm=$(head -1 "$W/pg/data/postmaster.pid" 2>/dev/null) || return 0
  python3 - "$pm" <<'PY2'
import os, sys
pm = sys.argv[1]
hz = os.sysconf("SC_CLK_TCK")
def fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()
f = fields(pm)
t = sum(int(x) for x in f[11:15])  # utime stime cutime cstime
for pid in os.listdir("/proc"):
    if pid.isdigit() and pid != pm:
        try:
            g = fields(pid)
            if g[1] == pm:  # ppid
                t += int(g[11]) + int(g[12])
        except (OSError, IndexError):
            pass
print(t / hz)
PY2
}
# PERF=1: a sampled CPU profile of the whole machine during each measured
# driver run (perf record -a), reported for the server's processes only
# (comm postgres) by symbol into DIR.perf: where the server's CPU goes for
# each driver.
perfstart() { [ -n "${PERF:-}" ] || return 0; perf record -q -a -F 999 -o "$1.perf.data" >/dev/null 2>&1 & PERFPID=$!; }
perfstop() {
  [ -n "${PERF:-}" ] || return 0
  kill -INT "$PERFPID" 2>/dev/null; wait "$PERFPID" 2>/dev/null || true
  perf report -q -i "$1.perf.data" --comm postgres --sort dso,symbol --percent-limit 0.3 --stdio > "$1.perf" 2>/dev/null || true
  [ -n "${PERF_KEEP:-}" ] || rm -f "$1.perf.data"
}
# inhost HOST CMD...: CMD in the host's cgroup (as is without HOSTS).
inhost() { local h=$1; shift; if [ -n "$CG" ]; then ( echo "$BASHPID" > "$CG/$h/cgroup.procs" && "$@" ); else "$@"; fi; }
mkdir -p "$OUT"
asuser() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  kill -TERM $(jobs -p) 2>/dev/null || true; wait || true
  [ -f "$W/pg/data/postmaster.pid" ] && asuser "$PGBIN/pg_ctl" -D "$W/pg/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$W"
  if [ -n "$CG" ]; then
    for h in server driver; do
      for p in $(cat "$CG/$h/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    done
    sleep 0.2; rmdir "$CG"/server "$CG"/driver "$CG" 2>/dev/null || true
  fi
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PGP=$(port); TNB=$(port); TND=$(port)

# PostgreSQL on TCP, as the postgres OS user (same settings as the managed one
# in scripts/bench-tpcc.sh, and commits not waiting for the disk: the machine's
# disk is shared and this compares drivers, not durability).
mkdir -p "$W/pg"; [ "$(id -u)" = 0 ] && chown postgres "$W/pg"
asuser "$PGBIN/initdb" -D "$W/pg/data" -U postgres -A trust >/dev/null
inhost server asuser "$PGBIN/pg_ctl" -D "$W/pg/data" -l "$W/pg/log" -w -o \
  "-c port=$PGP -c listen_addresses=127.0.0.1 -c unix_socket_directories=$W/pg -c max_connections=100 -c shared_buffers=256MB -c synchronous_commit=off${PGSS:+ -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all}" start >/dev/null
PSQL=("$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PGP" -U postgres -d postgres -v ON_ERROR_STOP=1)
for db in bb td; do "${PSQL[@]}" -c "CREATE DATABASE $db"; done
[ -n "${PGSS:-}" ] && "${PSQL[@]}" -c "CREATE EXTENSION pg_stat_statements"
# pgss FILE DB: with PGSS=1, the server's statement counts for the run that
# just ended (calls, time) into FILE, then a reset: what each driver sends.
pgss() {
  [ -n "${PGSS:-}" ] || return 0
  "${PSQL[@]}" -P pager=off -c "SELECT calls, round(total_exec_time)::bigint AS total_ms, round(mean_exec_time::numeric, 3) AS mean_ms, left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS query FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$2') ORDER BY total_exec_time DESC LIMIT 40" > "$1"
  "${PSQL[@]}" -c "SELECT pg_stat_statements_reset()" >/dev/null
}

# A tandem node relays to one database (its DSN's): one node per driver's
# database, both on the same PostgreSQL server.
if [[ " $TARGETS $LOAD_TARGET " == *" tandem-pg "* ]]; then
  for db in bb td; do
    cat > "$W/tandem-$db.toml" <<TOML
cluster = "bench-$db"
auth = "trust"
run_dir = "$W/tandem-$db"
log_level = "warn"
[[nodes]]
id = "n1"
listen = "127.0.0.1:$([ $db = bb ] && echo "$TNB" || echo "$TND")"
backend = "postgres"
dsn = "postgres://postgres@127.0.0.1:$PGP/$db?sslmode=disable"
TOML
    inhost server "$T" up -c "$W/tandem-$db.toml" > "$W/tandem-$db.out" 2>&1 &
  done
  for db in bb td; do
    for i in $(seq 1 120); do grep -q "connect with" "$W/tandem-$db.out" 2>/dev/null && break; sleep 0.5; done
    grep -q "connect with" "$W/tandem-$db.out" || { cat "$W/tandem-$db.out" >&2; exit 1; }
  done
fi
# hostport TARGET DB
hostport() { case $1 in direct) echo "127.0.0.1:$PGP";; tandem-pg) [ "$2" = bb ] && echo "127.0.0.1:$TNB" || echo "127.0.0.1:$TND";; esac; }

# cputime FILE CMD...: CMD, its CPU time (user, sys) in FILE when GNU time is there.
cputime() { local f=$1; shift; if [ -x /usr/bin/time ]; then /usr/bin/time -o "$f" -f "%U %S" "$@"; else "$@"; fi; }

# bbconfig WORKLOAD TARGET FILE: BenchBase's sample configuration for
# PostgreSQL with this run's scale, terminals, times, isolation and mix.
bbconfig() {
  local wl=$1 url="jdbc:postgresql://$(hostport "$2" "$BBDB")/$BBDB?sslmode=disable&amp;ApplicationName=$1&amp;reWriteBatchedInserts=true"
  local scale weights types
  case $wl in
    tpcc) scale=$WH; weights=45,43,4,4,4
      types="NewOrder Payment OrderStatus Delivery StockLevel";;
    epinions) scale=$EP_SCALE; weights=16,16,16,16,16,5,5,5,5   # seed 001 table 3.1 = tandem's default mix seed001
      types="GetReviewItemById GetReviewsByUser GetAverageRatingByTrustedUser GetItemAverageRating GetItemReviewsByTrustedUser UpdateUserName UpdateItemTitle UpdateReviewRating UpdateTrustRating";;
  esac
  {
    echo "<?xml version=\"1.0\"?><parameters>"
    echo "<type>POSTGRES</type><driver>org.postgresql.Driver</driver><url>$url</url>"
    echo "<username>postgres</username><password></password>"
    echo "<reconnectOnConnectionFailure>true</reconnectOnConnectionFailure>"
    echo "<isolation>$ISOLATION</isolation><batchsize>128</batchsize>"
    echo "<scalefactor>$scale</scalefactor><terminals>$TERM_N</terminals>"
    echo "<works><work><warmup>$RAMP</warmup><time>$DUR</time><rate>unlimited</rate><weights>$weights</weights></work></works>"
    echo "<transactiontypes>"
    for t in $types; do echo "<transactiontype><name>$t</name></transactiontype>"; done
    echo "</transactiontypes></parameters>"
  } > "$3"
}

# bb WORKLOAD TARGET DIR ARGS...: runs BenchBase, its log in DIR.log.
bb() {
  local wl=$1 target=$2 dir=$3; shift 3
  bbconfig "$wl" "$target" "$W/$wl-$target.xml"
  # A fresh directory: BenchBase names its files by time, and the summary
  # reads the first it finds (an earlier invocation's, with the same OUT).
  rm -rf "$dir"; mkdir -p "$dir"
  local host=${BB_HOST:-}
  ( cd "$BB" && ${host:+inhost "$host"} cputime "$dir.cpu" java -jar benchbase.jar -b "$wl" -c "$W/$wl-$target.xml" -d "$dir" \
      --json-histograms "$dir/histograms.json" "$@" ) > "$dir.log" 2>&1 \
    || { echo "BenchBase $wl on $target FAILED (exit $?); the end of $dir.log:" >&2; tail -30 "$dir.log" >&2; return 1; }
}

# summary LABEL FILE...: one line per run: throughput, goodput, tpmC; then
# the ratio of the second to the first (td / bb).
summary() {
  python3 - "$@" <<'PY'
import json, sys, glob, os
label, bbdir, tddir = sys.argv[1:4]
td2dir = sys.argv[4] if len(sys.argv) > 4 else None
def bb(d):
    # Throughput: BenchBase's own figure (transactions that started and ended
    # in the measured window, whatever their outcome, per second). Its
    # "Goodput" counts successes of the warm-up too, so goodput here is the
    # throughput times the success share of BenchBase's histograms, and
    # tpmC the measured NewOrders (raw.csv) times NewOrder's success share.
    s = json.load(open(glob.glob(os.path.join(d, "*.summary.json"))[0]))
    secs = s["Elapsed Time (nanoseconds)"] / 1e9
    h = json.load(open(os.path.join(d, "histograms.json")))
    def hist(kind, name=None):
        v = h.get(kind, {}).get("HISTOGRAM", {})
        return sum(n for k, n in v.items() if isinstance(n, (int, float)) and (name is None or k.split("/")[0].endswith("." + name)))
    def share(name=None):
        ok = hist("completed", name)
        tot = ok + sum(hist(k, name) for k in ("aborted", "rejected", "unexpected"))
        return ok / tot if tot else 0
    tput = s["Throughput (requests/second)"]
    no = 0
    for raw in glob.glob(os.path.join(d, "*.raw.csv")):
        with open(raw) as f:
            next(f)
            no = sum(1 for line in f if line.split(",")[1] == "NewOrder")
    return tput, tput * share(), no * share("NewOrder") / secs * 60, cpu(d)
def cpu(d):
    try:
        u, s = open(d + ".cpu").read().split()[-2:]
        return float(u) + float(s)
    except Exception:
        return 0
def td(d):
    r = json.load(open(os.path.join(d, "result.json")))
    no = r["transactions"].get("NewOrder", {}).get("counted", 0)
    return r["total_tps"], r["mqth"], no / r["measured_s"] * 60, cpu(d)
try:
    a, b = bb(bbdir), td(tddir)
except Exception as e:
    print(f"{label}: no result ({e})"); sys.exit(0)
tpmc = lambda x: f"  tpmC {x:8.0f}" if x else ""
# The driver's CPU (user + sys, the whole process: start, warm-up, window,
# and BenchBase's JVM start and JIT) per transaction of the warm-up and window.
span = float(os.environ.get("SPAN", "0"))
cpt = lambda x: f"  driver CPU {x[3]:6.1f} s = {x[3] / (x[0] * span) * 1e6:5.0f} us/txn" if x[3] and x[0] and span else ""
def srv(d):
    # With HOSTS: the share of the run's 100 ms periods in which the server
    # hit its CPU quota (cgroup cpu.stat).
    try:
        p0, t0, p1, t1 = map(int, open(d + ".srv").read().split())
        return f"  server throttled in {100 * (t1 - t0) / (p1 - p0):3.0f}% of periods" if p1 > p0 else ""
    except Exception:
        return ""
def scpu(d, x):
    # The server's CPU (user + sys of every PostgreSQL process) during the
    # driver's run, per transaction of its warm-up and window. Through
    # tandem this is PostgreSQL's share only (the node is not counted).
    try:
        c0, c1 = map(float, open(d + ".scpu").read().split())
        return f"  server CPU {(c1 - c0) / (x[0] * span) * 1e6:5.0f} us/txn" if x[0] and span else ""
    except Exception:
        return ""
print(f"{label}  BenchBase      tps {a[0]:8.1f}  goodput {a[1]:8.1f}{tpmc(a[2])}{cpt(a)}{scpu(bbdir, a)}{srv(bbdir)}")
print(f"{label}  tandem driver  tps {b[0]:8.1f}  goodput {b[1]:8.1f}{tpmc(b[2])}{cpt(b)}{scpu(tddir, b)}{srv(tddir)}")
r = lambda x, y: f"{x / y:5.3f}" if y else "  n/a"
print(f"{label}  ratio td/bb    tps {r(b[0], a[0])}     goodput {r(b[1], a[1])}    " + (f"  tpmC {r(b[2], a[2])}" if a[2] else ""))
if td2dir:
    try:
        c = td(td2dir)
    except Exception as e:
        print(f"{label}: no td2 result ({e})"); sys.exit(0)
    print(f"{label}  tandem td2     tps {c[0]:8.1f}  goodput {c[1]:8.1f}{tpmc(c[2])}{cpt(c)}{scpu(td2dir, c)}{srv(td2dir)}")
    print(f"{label}  ratio td2/bb   tps {r(c[0], a[0])}     goodput {r(c[1], a[1])}    " + (f"  tpmC {r(c[2], a[2])}" if a[2] else ""))
PY
}

for wl in $WORKLOADS; do
  BBDB=bb TDDB=td
  case $wl in tpcc) scale=$WH;; epinions) scale=$EP_SCALE;; *) echo "bench-benchbase: workload $wl: only tpcc and epinions" >&2; exit 1;; esac
  echo "== loading $wl at scale $scale ($LOAD_TARGET): BenchBase into database bb, tandem into td" >&2
  bb "$wl" "$LOAD_TARGET" "$OUT/load-$wl" --create=true --load=true --execute=false
  "$T" bench load --workload "$wl" --scale "$scale" --dsn "postgres://postgres@$(hostport "$LOAD_TARGET" td)/td?sslmode=disable" --drop --quiet
  if [ -n "${NOFK:-}" ]; then
    "${PSQL[@]}" -d bb -At -c "SELECT format('ALTER TABLE %I DROP CONSTRAINT %I;', conrelid::regclass, conname) FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace" \
      | "${PSQL[@]}" -d bb
    echo "== NOFK: dropped BenchBase's foreign keys in bb ($("${PSQL[@]}" -d bb -At -c "SELECT count(*) FROM pg_constraint WHERE contype = 'f'") left)" >&2
  fi
  "${PSQL[@]}" -d bb -c "VACUUM ANALYZE"; "${PSQL[@]}" -d td -c "VACUUM ANALYZE"
  "${PSQL[@]}" -c "CHECKPOINT"
  if [ -n "${SWAP_DB:-}" ]; then BBDB=td TDDB=bb; echo "== SWAP_DB: BenchBase runs on td, tandem's driver on bb" >&2; fi
  for r in $(seq 1 "$R"); do
    for target in $TARGETS; do
      # Odd rounds BenchBase first, even rounds tandem's driver first.
      order="bb td"; [ $((r % 2)) = 0 ] && order="td bb"
      if [ -n "${TD2_ARGS:-}" ]; then
        case $((r % 3)) in 1) order="bb td td2";; 2) order="td td2 bb";; 0) order="td2 bb td";; esac
      fi
      echo "== $wl round $r on $target: $order" >&2
      for drv in $order; do
        if [ $drv = bb ]; then
          pgss /dev/null $BBDB; s0=$(srvstat || true); c0=$(srvcpu); perfstart "$OUT/$wl-r$r-$target-bb"
          BB_HOST=${CG:+driver} bb "$wl" "$target" "$OUT/$wl-r$r-$target-bb" --create=false --load=false --execute=true || true
          perfstop "$OUT/$wl-r$r-$target-bb"; sleep 0.3; echo "$c0 $(srvcpu)" > "$OUT/$wl-r$r-$target-bb.scpu"
          [ -n "$CG" ] && echo "$s0 $(srvstat)" > "$OUT/$wl-r$r-$target-bb.srv"
          pgss "$OUT/$wl-r$r-$target-bb.pgss" $BBDB
        else
          args=${TD_ARGS:-}; [ $drv = td2 ] && args=$TD2_ARGS
          pgss /dev/null $TDDB; s0=$(srvstat || true); c0=$(srvcpu); perfstart "$OUT/$wl-r$r-$target-$drv"
          ${CG:+inhost driver} cputime "$OUT/$wl-r$r-$target-$drv.cpu" "$T" bench run --workload "$wl" --dsn "postgres://postgres@$(hostport "$target" $TDDB)/$TDDB?sslmode=disable" \
            --clients "$TERM_N" --rampup "${RAMP}s" --duration "${DUR}s" --quiet $args --out "$OUT/$wl-r$r-$target-$drv" \
            > "$OUT/$wl-r$r-$target-$drv.txt" 2>&1 || { echo "tandem bench run $wl on $target FAILED:" >&2; tail -20 "$OUT/$wl-r$r-$target-$drv.txt" >&2; }
          perfstop "$OUT/$wl-r$r-$target-$drv"; sleep 0.3; echo "$c0 $(srvcpu)" > "$OUT/$wl-r$r-$target-$drv.scpu"
          [ -n "$CG" ] && echo "$s0 $(srvstat)" > "$OUT/$wl-r$r-$target-$drv.srv"
          pgss "$OUT/$wl-r$r-$target-$drv.pgss" $TDDB
        fi
      done
    done
  done
  echo "### $wl, scale $scale, $TERM_N terminals, ${DUR}s measured after ${RAMP}s warm-up, $ISOLATION${CG:+, emulated hosts $HOSTS}${NOFK:+, BenchBase foreign keys dropped}"
  for r in $(seq 1 "$R"); do for target in $TARGETS; do
    SPAN=$((RAMP + DUR)) summary "$wl r$r $target" "$OUT/$wl-r$r-$target-bb" "$OUT/$wl-r$r-$target-td" ${TD2_ARGS:+"$OUT/$wl-r$r-$target-td2"}
  done; done
done
