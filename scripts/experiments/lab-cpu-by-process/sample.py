#!/usr/bin/env python3
"""Samples every process in a non-root cpu cgroup once a second:
time, pid, utime+stime (ticks), cpu cgroup, command line. Stops after
SECONDS or when the file STOP exists.  Usage: sample.py OUT.tsv SECONDS [STOP]"""
import os
import sys
import time

out = open(sys.argv[1], 'w')
end = time.time() + float(sys.argv[2])
stop = sys.argv[3] if len(sys.argv) > 3 else None
while time.time() < end and not (stop and os.path.exists(stop)):
    t = time.time()
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            st = open(f'/proc/{pid}/stat').read()
            cmd = open(f'/proc/{pid}/cmdline').read().replace('\0', ' ').strip()[:160]
            cg = open(f'/proc/{pid}/cgroup').read().splitlines()
        except OSError:
            continue
        cpu = [l.split(':', 2)[2] for l in cg if 'cpu' in l.split(':')[1].split(',')]
        if not cpu or cpu[0] == '/':
            continue
        f = st.rsplit(')', 1)[1].split()
        ticks = int(f[11]) + int(f[12])
        out.write(f"{t:.2f}\t{pid}\t{ticks}\t{cpu[0]}\t{cmd}\n")
    out.flush()
    time.sleep(1.0)
