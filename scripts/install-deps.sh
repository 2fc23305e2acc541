#!/usr/bin/env bash
# Installs what tandem's tests and benchmarks need on a fresh Debian machine:
# PostgreSQL (server binaries, psql, pgbench), HAProxy (the reference
# stack of the benchmarks: bench overhead, bench sweep's pg-pair-haproxy-*;
# bench/sweep's HAProxy tests run against it and skip without it) and
# pgpool-II (Debian's pgpool2: the seed001 suite's pg-pair-pgpool-* rows;
# bench/sweep's pgpool tests skip without it).
# --bench is accepted for compatibility (HAProxy is always installed).
# Safe to run again: it installs only what is missing.
set -euo pipefail
need=()
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! command -v postgres >/dev/null 2>&1; then need+=(postgresql); fi
command -v psql >/dev/null 2>&1 || need+=(postgresql-client)
command -v pgbench >/dev/null 2>&1 || need+=(postgresql-contrib)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]] || need+=(haproxy)
command -v pgpool >/dev/null 2>&1 || [[ -x /usr/sbin/pgpool ]] || need+=(pgpool2)
if ((${#need[@]})); then
  echo "install-deps: installing ${need[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  # Debian starts a cluster (and HAProxy, pgpool-II) on install; tandem's
  # tests and benchmarks run their own.
  $SUDO systemctl stop postgresql >/dev/null 2>&1 || $SUDO service postgresql stop >/dev/null 2>&1 || true
  $SUDO systemctl stop haproxy >/dev/null 2>&1 || $SUDO service haproxy stop >/dev/null 2>&1 || true
  $SUDO systemctl stop pgpool2 >/dev/null 2>&1 || $SUDO service pgpool2 stop >/dev/null 2>&1 || true
fi
if ! command -v go >/dev/null 2>&1; then
  echo "install-deps: Go is missing; install the toolchain named in go.mod (https://go.dev/dl)" >&2
  exit 1
fi
# Client libraries the end-to-end tests drive (Python, Java, Node drivers...):
# each feature adds its own script to scripts/deps.d/; each installs only what
# is missing.
for f in "$(dirname "$0")"/deps.d/*.sh; do
  [[ -e "$f" ]] || continue
  bash "$f"
done
