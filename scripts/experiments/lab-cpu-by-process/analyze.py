#!/usr/bin/env python3
"""CPU per transaction by emulated host and process class, per measured
window of `tandem bench scaleout` (its --json output gives X per window).
A window is the last DURATION seconds of each stretch in which the lab's
client host was busy (ramp-up, then the window), in the order the points
ran; with PROGRESS.tsv (run.sh's time-stamped progress lines) a window
ends at its summary line instead.
Usage: analyze.py SAMPLES.tsv SCALEOUT.json [PROGRESS.tsv]"""
import collections
import json
import sys

TCK = 100  # getconf CLK_TCK on Linux
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
so = json.load(open(sys.argv[2]))
dur = float(so['duration'].rstrip('s')) if isinstance(so['duration'], str) else so['duration'] / 1e9
by = collections.defaultdict(dict)
for t, pid, ticks, cg, cmd in rows:
    by[float(t)][pid] = (int(ticks), cg.rsplit('-', 1)[-1], cmd)
times = sorted(by)


def cls(cmd):
    if cmd.startswith('postgres: postgres '):
        return 'postgres: the node\'s own connections (apply, fence, probes)'
    if cmd.startswith('postgres: ') and (' idle' in cmd or '[local]' in cmd or '127.0.0.1' in cmd):
        return 'postgres: client sessions'
    if cmd.startswith('postgres:') or '/bin/postgres' in cmd:
        return 'postgres: background (postmaster, walwriter, checkpointer...)'
    w = cmd.split()
    return 'tandem ' + w[1] if len(w) > 1 and w[0].endswith('tandem') else w[0] if w else '?'


def cpu(t0, t1):
    d = collections.Counter()
    for pid, (tk, host, cmd) in by[t1].items():
        d[(host, cls(cmd))] += tk - by[t0].get(pid, (0,))[0]
    return d


# stretches with the client host busy
busy = []
for a, b in zip(times, times[1:]):
    c = sum(tk - by[a].get(pid, (tk,))[0] for pid, (tk, host, _) in by[b].items() if host == 'client')
    busy.append((a, b, c > 0))
stretches, cur = [], None
for a, b, on in busy:
    if on and cur is None:
        cur = [a, b]
    elif on:
        cur[1] = b
    elif cur is not None:
        stretches.append(cur)
        cur = None
if cur:
    stretches.append(cur)
stretches = [s for s in stretches if s[1] - s[0] >= dur]
points = so['points']
# One stretch per cluster (N and round): its mixes ran back to back, each
# a ramp-up and a window; the window ends where the stretch's share ends.
groups = []
for p in points:
    if groups and (groups[-1][0]['n'], groups[-1][0]['round']) == (p['n'], p['round']):
        groups[-1].append(p)
    else:
        groups.append([p])
if len(stretches) != len(groups):
    print(f"warning: {len(stretches)} busy stretches of the client for {len(groups)} clusters", file=sys.stderr)
windows = []
for g, (a, b) in zip(groups, stretches):
    step = (b - a) / len(g)
    for i, p in enumerate(g):
        windows.append((p, a + step * (i + 1)))
if len(sys.argv) > 3:
    ends = [float(l.split('\t', 1)[0]) for l in open(sys.argv[3]) if ' X = ' in l]
    if len(ends) == len(points):
        windows = [(p, e) for p, e in zip(points, ends)]
    else:
        print(f"warning: {len(ends)} summary lines for {len(points)} points", file=sys.stderr)
for p, end in windows:
    t1 = min(times, key=lambda t: abs(t - (end - 1)))
    t0 = min(times, key=lambda t: abs(t - (t1 - dur)))
    secs, x = t1 - t0, p['x']
    print(f"N = {p['n']} {p['mix']} round {p['round']}: X {x:.1f}/s over {secs:.0f} s; "
          f"{p.get('apply_batch_writesets', 0):.1f} writesets per apply batch")
    tot = collections.Counter()
    for (host, c), v in sorted(cpu(t0, t1).items()):
        ms = v * 1000 / TCK / secs / x
        tot[c] += ms
        print(f"  {host:8s} {c:62s} {v / TCK / secs:6.3f} cores {ms:7.3f} ms/tx")
    print("  all hosts, per class (ms of CPU per transaction):")
    for c, ms in sorted(tot.items()):
        print(f"    {c:70s} {ms:7.3f}")
