#!/usr/bin/env bash
# iproute2 (ip netns, veth, tc) for the partition tests (e2e/partition_test.go:
# the primary in its own network namespace, cut off with a tc qdisc). They
# need root; in CI (CI=true) they fail rather than skip when ip or tc is
# missing. Idempotent: installs only what is missing.
set -uo pipefail
if command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1; then
  exit 0
fi
echo "deps.d/netns: installing iproute2 (ip, tc)" >&2
SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq iproute2 >/dev/null
