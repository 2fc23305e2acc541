#!/usr/bin/env bash
# Client libraries for e2e/clients_*_test.go (real PostgreSQL drivers against
# tandem's SQLite back end): psycopg 3, asyncpg, SQLAlchemy 2 (with greenlet for its
# asyncio engine), alembic, Django, peewee, psycopg2 and Tortoise ORM from PyPI,
# ActiveRecord (ruby-activerecord, ruby-pg) from Debian,
# node-postgres, TypeORM, Sequelize, drizzle-kit, Knex, Kysely and MikroORM from npm
# into e2e/testdata/clients/node_modules (package.json there; no global install),
# the pgjdbc jar from Maven Central into e2e/testdata/clients/lib,
# Hibernate ORM 7 with its dependencies into e2e/testdata/clients/hibernate/lib,
# GORM's, bun's and golang-migrate's Go modules (e2e/testdata/clients/gorm,
# .../bun and .../migrate have a go.mod of their own).
# Idempotent: installs only what is missing. A tool that is absent (python3,
# npm, mvn) is reported and skipped; the tests then fail in CI.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
clients="$here/e2e/testdata/clients"
PGJDBC_VERSION=42.7.4
status=0

if command -v python3 >/dev/null 2>&1; then
  if ! python3 -c 'import psycopg, asyncpg, greenlet, sqlalchemy, alembic, django, peewee, psycopg2, tortoise' >/dev/null 2>&1; then
    echo "deps.d/clients: pip install psycopg[binary] asyncpg sqlalchemy[asyncio] alembic django peewee psycopg2-binary tortoise-orm" >&2
    python3 -m pip install -q 'psycopg[binary]>=3.1' 'asyncpg>=0.29' 'sqlalchemy[asyncio]>=2.0' alembic 'django>=4.2' 'peewee>=3.17' psycopg2-binary tortoise-orm 2>/dev/null ||
      python3 -m pip install -q --break-system-packages 'psycopg[binary]>=3.1' 'asyncpg>=0.29' 'sqlalchemy[asyncio]>=2.0' alembic 'django>=4.2' 'peewee>=3.17' psycopg2-binary tortoise-orm || status=1
  fi
else
  echo "deps.d/clients: python3 missing (psycopg, SQLAlchemy tests will fail in CI)" >&2
fi

if command -v npm >/dev/null 2>&1; then
  missing=()
  for p in pg typeorm sequelize drizzle-kit knex kysely @mikro-orm/core @mikro-orm/postgresql; do
    [[ -f "$clients/node_modules/$p/package.json" ]] || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "deps.d/clients: npm install (missing: ${missing[*]}; into $clients)" >&2
    (cd "$clients" && npm install --no-audit --no-fund --silent) || status=1
  fi
else
  echo "deps.d/clients: npm missing (node-postgres test will fail in CI)" >&2
fi

# ActiveRecord: Debian's (Rails 6.1 with ruby-pg), the registries reachable
# here having no RubyGems.
if ! ruby -e 'require "active_record"; require "pg"' >/dev/null 2>&1; then
  echo "deps.d/clients: apt-get install ruby-activerecord ruby-pg" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq ruby-activerecord ruby-pg >/dev/null; } || status=1
fi

jar="$clients/lib/postgresql-$PGJDBC_VERSION.jar"
if [[ ! -f "$jar" ]]; then
  if command -v mvn >/dev/null 2>&1; then
    echo "deps.d/clients: mvn dependency:copy org.postgresql:postgresql:$PGJDBC_VERSION" >&2
    mkdir -p "$clients/lib"
    mvn -q -B dependency:copy -Dartifact="org.postgresql:postgresql:$PGJDBC_VERSION" \
      -DoutputDirectory="$clients/lib" >/dev/null || status=1
  else
    echo "deps.d/clients: mvn missing (pgjdbc test will fail in CI)" >&2
  fi
fi

hib="$clients/hibernate"
if ! ls "$hib"/lib/hibernate-core-*.jar >/dev/null 2>&1; then
  if command -v mvn >/dev/null 2>&1; then
    echo "deps.d/clients: mvn dependency:copy-dependencies (Hibernate ORM, into $hib/lib)" >&2
    mvn -q -B -f "$hib/pom.xml" dependency:copy-dependencies -DoutputDirectory="$hib/lib" >/dev/null || status=1
  else
    echo "deps.d/clients: mvn missing (Hibernate test will fail in CI)" >&2
  fi
fi

# GORM, bun and golang-migrate: Go modules of their own (e2e/testdata/clients/gorm,
# .../bun, .../migrate), built by the test.
if command -v go >/dev/null 2>&1; then
  for m in gorm bun migrate; do
    (cd "$clients/$m" && go mod download) || status=1
  done
fi
exit $status
