"""psycopg 3 against tandem (e2e/pgpath_test.go): parameters in text and
binary, untyped parameters, server-side cursors and every COPY form of
psycopg's copy API. Exits non-zero on the first mismatch; prints
"pgpath.py: ok" at the end."""
import datetime
import decimal
import sys
import uuid

import psycopg

dsn = sys.argv[1]


def check(what, got, want):
    if got != want:
        sys.exit(f"pgpath.py: {what}: got {got!r}, want {want!r}")


conn = psycopg.connect(dsn, autocommit=True)
conn.execute("""CREATE TABLE py_types (id int PRIMARY KEY, i bigint, t text, n numeric,
    ts timestamptz, b bytea, f bool, u uuid)""")

ts = datetime.datetime(2026, 11, 25, 3, 4, 5, 123456, tzinfo=datetime.timezone.utc)
u = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
row = lambda i: (i, 2**40 + i, f"tëxt {i}", decimal.Decimal("12345.6789"), ts, bytes([0, 1, 2, 255]), i % 2 == 0, u)

# The statement: parameters as psycopg picks them (%s), all binary
# (%b) and all text (%t); then executemany (a pipeline: one Sync).
conn.execute("INSERT INTO py_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", row(1))
conn.execute("INSERT INTO py_types VALUES (%b, %b, %b, %b, %b, %b, %b, %b)", row(2))
conn.execute("INSERT INTO py_types VALUES (%t, %t, %t, %t, %t, %t, %t, %t)", row(3))
with conn.cursor() as cur:
    cur.executemany("INSERT INTO py_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", [row(i) for i in range(4, 9)])
for fmt in ("%s", "%b", "%t"):
    for binary in (False, True):
        with conn.cursor(binary=binary) as cur:
            got = cur.execute(f"SELECT * FROM py_types WHERE id = {fmt} AND u = {fmt}", (2, u)).fetchone()
            check(f"select by {fmt} (binary results {binary})", got, row(2))
# Prepared on the server (psycopg prepares after the first use with prepare=True).
for i in (5, 6):
    got = conn.execute("SELECT * FROM py_types WHERE id = %s", (i,), prepare=True).fetchone()
    check("prepared select", got, row(i))

# Untyped parameters: the server infers their types.
check("untyped text", conn.execute("SELECT %t::int + 1", ("41",)).fetchone(), (42,))
check("untyped where", conn.execute("SELECT t FROM py_types WHERE id = %t", ("3",)).fetchone(), ("tëxt 3",))
check("binary int", conn.execute("SELECT %b::int + 1", (41,)).fetchone(), (42,))

# A server-side cursor (DECLARE ... then FETCH, described as a portal).
with conn.transaction():
    with conn.cursor(name="py_cur") as cur:
        cur.itersize = 3
        cur.execute("SELECT id FROM py_types WHERE id > %s ORDER BY id", (2,))
        first = cur.fetchmany(2)
        rest = cur.fetchall()
        check("named cursor", [r[0] for r in first + rest], list(range(3, 9)))
# A WITH HOLD cursor outside a transaction block.
with conn.cursor(name="py_held", withhold=True) as cur:
    cur.execute("SELECT id FROM py_types ORDER BY id")
    check("held cursor", [r[0] for r in cur.fetchmany(3)] + [r[0] for r in cur.fetchall()], list(range(1, 9)))
# DECLARE / FETCH / CLOSE by hand.
with conn.transaction():
    conn.execute("DECLARE c2 CURSOR FOR SELECT g FROM generate_series(1, 7) g")
    got = []
    while True:
        rows = conn.execute("FETCH FORWARD 3 FROM c2").fetchall()
        if not rows:
            break
        got += [r[0] for r in rows]
    conn.execute("CLOSE c2")
    check("DECLARE/FETCH", got, list(range(1, 8)))

# Every COPY form of psycopg's copy API.
conn.execute("CREATE TABLE py_copy (id int PRIMARY KEY, v text, n numeric, at timestamptz)")
with conn.cursor() as cur:
    with cur.copy("COPY py_copy (id, v, n, at) FROM STDIN") as cp:  # text, write_row
        cp.write_row((1, "tab\there", decimal.Decimal("1.5"), ts))
        cp.write_row((2, None, None, None))
    with cur.copy("COPY py_copy FROM STDIN WITH (FORMAT csv)") as cp:  # raw CSV blocks
        cp.write('3,"comma, ""quoted""",2.5,2026-11-25 01:02:03+00\n4,,,\n')
    with cur.copy("COPY py_copy (id, v) FROM STDIN (FORMAT binary)") as cp:  # binary
        cp.set_types(["int4", "text"])
        cp.write_row((5, "binary"))
        cp.write_row((6, "bïnary"))
    with cur.copy("COPY py_copy (v, id) FROM STDIN WITH (FORMAT csv, DELIMITER ';', NULL 'NULL', HEADER true)") as cp:
        cp.write("v;id\nsemi;7\nNULL;8\n")
    check("count after COPY FROM", conn.execute("SELECT count(*) FROM py_copy").fetchone(), (8,))
    # COPY TO: rows(), raw blocks, binary with types, a query.
    with cur.copy("COPY py_copy (id, v) TO STDOUT") as cp:
        got = list(cp.rows())
    check("COPY TO text rows", sorted(got, key=lambda r: int(r[0]))[:3], [("1", "tab\there"), ("2", None), ("3", 'comma, "quoted"')])
    with cur.copy("COPY (SELECT id, v FROM py_copy WHERE id IN (5, 6) ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)") as cp:
        data = b"".join(bytes(b) for b in cp)
    check("COPY (query) TO csv", data.decode(), "id,v\n5,binary\n6,bïnary\n")
    with cur.copy("COPY (SELECT id, n FROM py_copy WHERE id = 1) TO STDOUT (FORMAT binary)") as cp:
        cp.set_types(["int4", "numeric"])
        check("COPY TO binary", list(cp.rows()), [(1, decimal.Decimal("1.5"))])
    with cur.copy("COPY py_copy TO STDOUT WITH (FORMAT csv, DELIMITER '|', FORCE_QUOTE (v))") as cp:
        data = b"".join(bytes(b) for b in cp).decode()
    check("COPY TO csv options", '7|"semi"||' in data, True)
# A failing COPY FROM leaves nothing behind and reports the server's error.
try:
    with conn.cursor() as cur:
        with cur.copy("COPY py_copy (id, v) FROM STDIN") as cp:
            cp.write_row((100, "ok"))
            cp.write_row((1, "duplicate key"))
    sys.exit("pgpath.py: a duplicate key in COPY did not fail")
except psycopg.errors.UniqueViolation:
    pass
check("after failed COPY", conn.execute("SELECT count(*) FROM py_copy WHERE id = 100").fetchone(), (0,))
# A COPY the client abandons (CopyFail) loads nothing, and the session goes on.
try:
    with conn.cursor() as cur:
        with cur.copy("COPY py_copy (id, v) FROM STDIN") as cp:
            cp.write_row((200, "abandoned"))
            raise RuntimeError("client gives up")
except (RuntimeError, psycopg.errors.QueryCanceled):
    pass
check("after CopyFail", conn.execute("SELECT count(*) FROM py_copy WHERE id = 200").fetchone(), (0,))
# COPY inside a transaction block commits with it.
with conn.transaction():
    with conn.cursor() as cur:
        with cur.copy("COPY py_copy (id, v) FROM STDIN") as cp:
            cp.write_row((9, "in a block"))
        cur.execute("UPDATE py_copy SET v = v || '!' WHERE id = 9")
check("COPY in a block", conn.execute("SELECT v FROM py_copy WHERE id = 9").fetchone(), ("in a block!",))
print("pgpath.py: ok")
