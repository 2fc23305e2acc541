#!/usr/bin/env bash
# CPU per transaction by emulated host and process class (tandem's node,
# the router, PostgreSQL's client sessions, the node's own PostgreSQL
# connections, PostgreSQL's background) over each measured window of
# `tandem bench scaleout`. As root (the lab's cgroups):
#   scripts/experiments/lab-cpu-by-process/run.sh OUTDIR [scaleout flags...]
# e.g. run.sh /tmp/cpu --design multi-master --backend postgres --nodes 2,4 \
#        --mix r20w80 --lab cpu=0.25,router=0.4,client=0.4 --duration 20s
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1; shift
mkdir -p "$out"
rm -f "$out/stop"
python3 "$here/sample.py" "$out/samples.tsv" 7200 "$out/stop" &
sampler=$!
trap 'touch "$out/stop"; wait $sampler 2>/dev/null || true' EXIT
# Its progress lines, time-stamped: each window's summary line ends it.
${TANDEM:-tandem} bench scaleout --json "$@" > "$out/scaleout.json" \
  2> >(python3 -u -c 'import sys,time
for l in sys.stdin: sys.stderr.write(l); print(f"{time.time():.2f}\t{l}", end="", flush=True)' > "$out/progress.tsv")
touch "$out/stop"
wait $sampler || true
python3 "$here/analyze.py" "$out/samples.tsv" "$out/scaleout.json" "$out/progress.tsv" | tee "$out/by-process.txt"
