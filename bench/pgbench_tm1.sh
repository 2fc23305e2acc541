#!/usr/bin/env bash
# Compare `tandem bench run` with pgbench running an equivalent TM1 R80W20
# script, to show the Go driver is not the bottleneck (goal: ratio >= 0.9).
#
# usage: bench/pgbench_tm1.sh DSN [SUBSCRIBERS] [CLIENTS] [SECONDS] [ROUNDS] [MODE]
#   DSN          target, e.g. postgres://postgres@127.0.0.1:5432/postgres,
#                already loaded with `tandem bench load --subscribers P`
#   SUBSCRIBERS  P (default: detected with SELECT count(*) FROM subscriber)
#   CLIENTS      default 8
#   SECONDS      measured seconds per run, default 20
#   ROUNDS       alternating pgbench/tandem pairs, default 3
#   MODE         prepared (default: tandem's default vs pgbench -M prepared)
#                or simple (tandem --simple vs pgbench -M simple)
# env: TANDEM   the tandem binary (default: tandem on PATH)
#      PGBENCH  the pgbench binary (default: pgbench on PATH)
#      SCRIPTS  keep the pgbench scripts in this directory (default: a
#               temporary one, removed at exit)
#      CLIENT_CPUS  run both clients under `taskset -c CLIENT_CPUS` (e.g. 1,
#               with the server started under `taskset -c 0`): then neither
#               client takes CPU from the server, and equal rates show that
#               the driver is not the bottleneck
#
# Besides the rates it prints each client program's own CPU time (user+sys)
# per 1000 transactions: on a small machine where client and server share
# the CPUs, that is what decides whether the driver takes throughput away
# from the server, and it is far less noisy than the rates.
#
# The pgbench scripts issue the same statements as bench/workloads/tm1 with
# the same key rules: NURand(A,1,P) is ((random(0,A) | random(1,P)) % P) + 1,
# single-statement transactions run in autocommit, the others in
# BEGIN ... END. Differences, all of which make pgbench's side do a little
# more server work, not less: sub_nbr is computed on the server with lpad(),
# and INSERT_CALL_FORWARDING is written as INSERT ... SELECT ... WHERE EXISTS
# ... ON CONFLICT DO NOTHING, because a pgbench client stops at the integrity
# errors the TM1 rules allow. pgbench cannot roll back on a 0-row write, so it
# commits instead (same cost). Its tps therefore counts every transaction and
# is compared with tandem's all-outcomes rate (total_tps); MQTh, which leaves
# out the ~3.5% rolled-back transactions, is shown as well.
set -euo pipefail

DSN=${1:?usage: $0 DSN [SUBSCRIBERS] [CLIENTS] [SECONDS] [ROUNDS] [MODE]}
P=${2:-}
CLIENTS=${3:-8}
SECONDS_PER_RUN=${4:-20}
ROUNDS=${5:-3}
MODE=${6:-prepared}
TANDEM=${TANDEM:-tandem}
PGBENCH=${PGBENCH:-pgbench}

case $MODE in
prepared) TANDEM_PROTO=() ;;
simple) TANDEM_PROTO=(--simple) ;;
*) echo "MODE must be prepared or simple, got $MODE" >&2; exit 2 ;;
esac

if [[ -z $P ]]; then
	P=$(psql "$DSN" -XAtc 'SELECT count(*) FROM subscriber')
fi
if ((P <= 1000000)); then A=65535; elif ((P <= 10000000)); then A=1048575; else A=2097151; fi
THREADS=$(nproc)
((THREADS > CLIENTS)) && THREADS=$CLIENTS

if [[ -n ${SCRIPTS:-} ]]; then
	dir=$SCRIPTS
	mkdir -p "$dir"
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
SID='\set s_id ((random(0, :A) | random(1, :P)) % :P) + 1'

cat >"$dir/get_subscriber_data.sql" <<EOF
$SID
SELECT s_id, sub_nbr, bit_1, bit_2, bit_3, bit_4, bit_5, bit_6, bit_7, bit_8, bit_9, bit_10, hex_1, hex_2, hex_3, hex_4, hex_5, hex_6, hex_7, hex_8, hex_9, hex_10, byte2_1, byte2_2, byte2_3, byte2_4, byte2_5, byte2_6, byte2_7, byte2_8, byte2_9, byte2_10, msc_location, vlr_location FROM subscriber WHERE s_id = :s_id;
EOF
cat >"$dir/get_new_destination.sql" <<EOF
$SID
\set sf_type random(1, 4)
\set start_time random(0, 2) * 8
\set end_time random(0, 2) * 8 + random(1, 8)
SELECT cf.numberx FROM special_facility AS sf, call_forwarding AS cf WHERE sf.s_id = :s_id AND sf.sf_type = :sf_type AND sf.is_active = 1 AND cf.s_id = sf.s_id AND cf.sf_type = sf.sf_type AND cf.start_time <= :start_time AND :end_time < cf.end_time;
EOF
cat >"$dir/get_access_data.sql" <<EOF
$SID
\set ai_type random(1, 4)
SELECT data1, data2, data3, data4 FROM access_info WHERE s_id = :s_id AND ai_type = :ai_type;
EOF
cat >"$dir/update_subscriber_data.sql" <<EOF
$SID
\set bit random(0, 1)
\set data_a random(0, 255)
\set sf_type random(1, 4)
BEGIN;
UPDATE subscriber SET bit_1 = :bit WHERE s_id = :s_id;
UPDATE special_facility SET data_a = :data_a WHERE s_id = :s_id AND sf_type = :sf_type;
END;
EOF
cat >"$dir/update_location.sql" <<EOF
$SID
\set vlr random(1, 2147483647)
UPDATE subscriber SET vlr_location = :vlr WHERE sub_nbr = lpad(:s_id::text, 15, '0');
EOF
cat >"$dir/insert_call_forwarding.sql" <<EOF
$SID
\set sf_type random(1, 4)
\set start_time random(0, 2) * 8
\set end_time :start_time + random(1, 8)
\set numberx random(100000000000000, 999999999999999)
BEGIN;
SELECT s_id FROM subscriber WHERE sub_nbr = lpad(:s_id::text, 15, '0') \gset sub_
SELECT sf_type FROM special_facility WHERE s_id = :sub_s_id;
INSERT INTO call_forwarding SELECT :sub_s_id::integer, :sf_type::smallint, :start_time::smallint, :end_time::smallint, :numberx::text WHERE EXISTS (SELECT 1 FROM special_facility WHERE s_id = :sub_s_id::integer AND sf_type = :sf_type::smallint) ON CONFLICT DO NOTHING;
END;
EOF
cat >"$dir/delete_call_forwarding.sql" <<EOF
$SID
\set sf_type random(1, 4)
\set start_time random(0, 2) * 8
BEGIN;
SELECT s_id FROM subscriber WHERE sub_nbr = lpad(:s_id::text, 15, '0') \gset sub_
DELETE FROM call_forwarding WHERE s_id = :sub_s_id AND sf_type = :sf_type AND start_time = :start_time;
END;
EOF

echo "P=$P A=$A clients=$CLIENTS pgbench threads=$THREADS ${SECONDS_PER_RUN}s per run, $ROUNDS rounds, mode $MODE" >&2
echo "round pgbench_tps tandem_total_tps tandem_mqth pgbench_cpu_ms_per_1000tx tandem_cpu_ms_per_1000tx"
TIMEFORMAT='%U %S'
PIN=()
if [[ -n ${CLIENT_CPUS:-} ]]; then
	PIN=(taskset -c "$CLIENT_CPUS")
	echo "clients pinned to CPUs $CLIENT_CPUS" >&2
fi
pg_sum=0 td_sum=0 mq_sum=0 pgcpu_sum=0 tdcpu_sum=0
ratios=()
for ((r = 1; r <= ROUNDS; r++)); do
	cpu=$({ time "${PIN[@]}" "$PGBENCH" -n -M "$MODE" -c "$CLIENTS" -j "$THREADS" -T "$SECONDS_PER_RUN" -D P="$P" -D A="$A" \
		-f "$dir/get_subscriber_data.sql@35" -f "$dir/get_new_destination.sql@10" -f "$dir/get_access_data.sql@35" \
		-f "$dir/update_subscriber_data.sql@2" -f "$dir/update_location.sql@14" \
		-f "$dir/insert_call_forwarding.sql@2" -f "$dir/delete_call_forwarding.sql@2" \
		"$DSN" >"$dir/pgbench.out" 2>&1 || echo FAILED; } 2>&1)
	pg=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$dir/pgbench.out" | tail -1)
	pgtx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$dir/pgbench.out")
	if [[ $cpu == *FAILED* || -z $pg || -z $pgtx ]]; then
		cat "$dir/pgbench.out" >&2
		exit 1
	fi
	pgcpu=$(echo "($(echo "$cpu" | tr ' ' '+')) * 1000000 / $pgtx" | bc -l)
	cpu=$({ time "${PIN[@]}" "$TANDEM" bench run --workload tm1 --mix r80w20 --dsn "$DSN" --subscribers "$P" --clients "$CLIENTS" \
		--rampup 0s --duration "${SECONDS_PER_RUN}s" --quiet --json "${TANDEM_PROTO[@]}" >"$dir/tandem.json" 2>"$dir/tandem.err" ||
		echo FAILED; } 2>&1)
	if [[ $cpu == *FAILED* ]]; then
		cat "$dir/tandem.err" >&2
		exit 1
	fi
	td=$(sed -n 's/^  "total_tps": \([0-9.]*\),*$/\1/p' "$dir/tandem.json")
	mq=$(sed -n 's/^  "mqth": \([0-9.]*\),*$/\1/p' "$dir/tandem.json")
	tdtx=$(echo "$td * $SECONDS_PER_RUN" | bc -l)
	tdcpu=$(echo "($(echo "$cpu" | tr ' ' '+')) * 1000000 / $tdtx" | bc -l)
	printf '%d %.1f %.1f %.1f %.1f %.1f\n' "$r" "$pg" "$td" "$mq" "$pgcpu" "$tdcpu"
	ratios+=("$(echo "$td / $pg" | bc -l)")
	pg_sum=$(echo "$pg_sum + $pg" | bc -l)
	td_sum=$(echo "$td_sum + $td" | bc -l)
	mq_sum=$(echo "$mq_sum + $mq" | bc -l)
	pgcpu_sum=$(echo "$pgcpu_sum + $pgcpu" | bc -l)
	tdcpu_sum=$(echo "$tdcpu_sum + $tdcpu" | bc -l)
done
printf 'mean pgbench tps %.1f, tandem all-outcomes tps %.1f, tandem MQTh %.1f\n' \
	"$(echo "$pg_sum / $ROUNDS" | bc -l)" "$(echo "$td_sum / $ROUNDS" | bc -l)" "$(echo "$mq_sum / $ROUNDS" | bc -l)"
printf 'client CPU per 1000 transactions: pgbench %.1f ms, tandem %.1f ms\n' \
	"$(echo "$pgcpu_sum / $ROUNDS" | bc -l)" "$(echo "$tdcpu_sum / $ROUNDS" | bc -l)"
printf 'ratio tandem/pgbench: all outcomes %.3f, MQTh %.3f (ratio of the means); median of the rounds'"'"' all-outcomes ratios %.3f\n' \
	"$(echo "$td_sum / $pg_sum" | bc -l)" "$(echo "$mq_sum / $pg_sum" | bc -l)" \
	"$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')"
