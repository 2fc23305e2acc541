#!/usr/bin/env bash
# Clients for the PostgreSQL-path e2e tests (e2e/pgpath_test.go): psycopg 3
# (pip) and the pgjdbc driver jar (Maven Central), compiled against with
# javac at test time. Installs only what is missing.
set -euo pipefail
SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
need=()
command -v python3 >/dev/null 2>&1 || need+=(python3)
{ command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; } || need+=(python3-pip)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if ((${#need[@]})); then
  echo "deps.d/pgpath: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! python3 -c 'import psycopg' >/dev/null 2>&1; then
  echo "deps.d/pgpath: installing psycopg[binary]" >&2
  python3 -m pip install -q 'psycopg[binary]>=3.1' 2>/dev/null ||
    python3 -m pip install -q --break-system-packages 'psycopg[binary]>=3.1'
fi
PGJDBC_VERSION=42.7.4
jar="$HOME/.m2/repository/org/postgresql/postgresql/$PGJDBC_VERSION/postgresql-$PGJDBC_VERSION.jar"
if [[ ! -f "$jar" ]]; then
  echo "deps.d/pgpath: fetching org.postgresql:postgresql:$PGJDBC_VERSION" >&2
  mvn -q dependency:get -Dartifact="org.postgresql:postgresql:$PGJDBC_VERSION" -Dtransitive=false
fi
