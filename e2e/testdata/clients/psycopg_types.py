"""psycopg 3 against tandem: types round-trip (text and binary, client- and
server-side parameters, prepared statements). Usage: psycopg_types.py DSN.
Exits non-zero with a message on the first difference."""
import datetime
import decimal
import sys
import uuid

import psycopg
from psycopg.types.json import Json, Jsonb

dsn = sys.argv[1]

ROWS = [
    dict(id=1, i=42, big=10_000_000_000, n=decimal.Decimal("12345.67"), t="héllo 'quoted'",
         b=True, ts=datetime.datetime(2024, 3, 15, 13, 45, 30, 123456, tzinfo=datetime.timezone.utc),
         d=datetime.date(2024, 2, 29), raw=b"\x00\x01\xfe\xff", j={"a": 1, "b": [1, 2, None]},
         jb={"k": "v", "n": 1.5}, u=uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
    dict(id=2, i=-7, big=-1, n=decimal.Decimal("0.50"), t="", b=False,
         ts=datetime.datetime(1999, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc),
         d=datetime.date(1970, 1, 1), raw=b"", j=[], jb={}, u=uuid.UUID(int=0)),
    dict(id=3, i=None, big=None, n=None, t=None, b=None, ts=None, d=None, raw=None, j=None, jb=None, u=None),
]
COLS = ["id", "i", "big", "n", "t", "b", "ts", "d", "raw", "j", "jb", "u"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check_rows(label, got):
    if len(got) != len(ROWS):
        fail(f"{label}: {len(got)} rows, want {len(ROWS)}")
    for want, row in zip(ROWS, got):
        for c, v in zip(COLS, row):
            w = want[c]
            if v != w or type(v) is not type(w):
                fail(f"{label}: row {want['id']} column {c}: got {v!r} ({type(v).__name__}), want {w!r} ({type(w).__name__})")


with psycopg.connect(dsn, autocommit=True) as conn:
    conn.execute("DROP TABLE IF EXISTS py_types")
    conn.execute("""CREATE TABLE py_types (
        id integer PRIMARY KEY, i integer, big bigint, n numeric(12,2), t text, b boolean,
        ts timestamptz, d date, raw bytea, j json, jb jsonb, u uuid)""")
    # Client-side parameters (%s), sent by psycopg with their types, text and binary.
    for r in ROWS[:2]:
        vals = dict(r, j=Json(r["j"]), jb=Jsonb(r["jb"]))
        conn.execute("INSERT INTO py_types VALUES (%(id)s, %(i)s, %(big)s, %(n)s, %(t)s, %(b)s, %(ts)s, %(d)s, %(raw)s, %(j)s, %(jb)s, %(u)s)", vals)
    # Binary parameters (%b) and NULLs.
    r = ROWS[2]
    conn.execute("INSERT INTO py_types VALUES (%b, %b, %b, %b, %b, %b, %b, %b, %b, %b, %b, %b)",
                 [r["id"], None, None, None, None, None, None, None, None, None, None, None])

    q = "SELECT id, i, big, n, t, b, ts, d, raw, j, jb, u FROM py_types ORDER BY id"
    check_rows("text results", conn.execute(q).fetchall())
    check_rows("binary results", conn.execute(q, binary=True).fetchall())
    check_rows("prepared", conn.execute(q, prepare=True).fetchall())
    check_rows("prepared again", conn.execute(q, prepare=True).fetchall())
    with conn.cursor(binary=True) as cur:
        cur.execute(q)
        check_rows("binary cursor", cur.fetchall())

    # Parameters in WHERE, of each type, text and binary, prepared.
    for binary in (False, True):
        for prepare in (False, True):
            want = ROWS[0]
            for col in ("i", "big", "n", "t", "b", "ts", "d", "raw", "u"):
                row = conn.execute(f"SELECT id FROM py_types WHERE {col} = %s", [want[col]], binary=binary, prepare=prepare).fetchone()
                if row != (1,):
                    fail(f"WHERE {col} = %s (binary={binary}, prepare={prepare}): got {row!r}")
    # Typed expressions and their Python types.
    row = conn.execute("SELECT 1 + %s::int, %s::text || 'x', %s::numeric * 2, %s::date + 1, %s::boolean",
                       [1, "a", decimal.Decimal("1.25"), datetime.date(2024, 1, 31), True]).fetchone()
    if row != (2, "ax", decimal.Decimal("2.50"), datetime.date(2024, 2, 1), True):
        fail(f"expressions: {row!r}")
    # UPDATE ... RETURNING with parameters; rowcount.
    cur = conn.execute("UPDATE py_types SET i = i + %s WHERE id <= %s RETURNING id, i", [1, 2])
    if sorted(cur.fetchall()) != [(1, 43), (2, -6)] or cur.rowcount != 2:
        fail("UPDATE RETURNING")
    # executemany (pipeline) and a transaction rolled back.
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO py_types (id, t) VALUES (%s, %s)", [(10 + k, f"m{k}") for k in range(5)])
    try:
        with conn.transaction():
            conn.execute("INSERT INTO py_types (id) VALUES (%s)", [99])
            raise RuntimeError("rollback")
    except RuntimeError:
        pass
    n = conn.execute("SELECT count(*) FROM py_types").fetchone()[0]
    if n != 8:
        fail(f"count after executemany and rollback: {n}, want 8")
    # An error carries PostgreSQL's SQLSTATE.
    try:
        conn.execute("INSERT INTO py_types (id) VALUES (%s)", [1])
        fail("duplicate key accepted")
    except psycopg.errors.UniqueViolation:
        pass
    # psycopg's type introspection (reads pg_type).
    from psycopg.types import TypeInfo
    info = TypeInfo.fetch(conn, "uuid")
    if info is None or info.oid != 2950:
        fail(f"TypeInfo.fetch(uuid): {info!r}")

    # Named (server-side) cursors: DECLARE, Describe of the portal, FETCH,
    # MOVE and CLOSE (SQLAlchemy's stream_results, Django's iterator()).
    conn.execute("UPDATE py_types SET i = i - 1 WHERE id <= 2")  # as inserted
    q3 = q.replace("ORDER BY", "WHERE id <= 3 ORDER BY")
    with conn.transaction():
        for binary in (False, True):
            with conn.cursor(f"srv_{binary}", binary=binary) as cur:
                cur.execute(q3)
                if [d.name for d in cur.description] != COLS:
                    fail(f"server cursor description: {cur.description!r}")
                got = cur.fetchmany(2) + [cur.fetchone()] + cur.fetchall()
                check_rows(f"server cursor (binary={binary})", got)
        with conn.cursor("srv_params") as cur:
            cur.execute("SELECT id, t FROM py_types WHERE id <= %s ORDER BY id", [2])
            if cur.fetchall() != [(1, ROWS[0]["t"]), (2, "")]:
                fail("server cursor with a parameter")
        with conn.cursor("srv_scroll", scrollable=True) as cur:
            cur.execute("SELECT id FROM py_types WHERE id <= 3 ORDER BY id")
            cur.scroll(2, mode="absolute")
            if cur.fetchone() != (3,):
                fail("scrollable server cursor: absolute 2")
            cur.scroll(-2)
            if cur.fetchone() != (2,):
                fail("scrollable server cursor: relative -2")
    # WITH HOLD in autocommit (Django's iterator() outside a transaction),
    # read in chunks of itersize.
    conn.execute("INSERT INTO py_types (id, t) SELECT g, 'h' || g FROM generate_series(100, 349) g")
    with conn.cursor("held", withhold=True) as cur:
        cur.itersize = 40
        cur.execute("SELECT id, t FROM py_types WHERE id >= 100 ORDER BY id")
        ids = [r[0] for r in cur]
        if ids != list(range(100, 350)):
            fail(f"WITH HOLD server cursor: {len(ids)} rows, first {ids[:3]}")
    try:
        with conn.transaction():
            with conn.cursor("noscroll", scrollable=False) as cur:
                cur.execute("SELECT id FROM py_types")
                cur.scroll(-1)
        fail("a backward scroll of a NO SCROLL cursor was accepted")
    except psycopg.errors.ObjectNotInPrerequisiteState:
        pass
    conn.execute("DELETE FROM py_types WHERE id >= 100")
print("ok")
