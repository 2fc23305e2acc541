"""asyncpg against tandem. asyncpg prepares every statement, encodes each
parameter in binary by the type the server gives it in ParameterDescription,
asks for every result column in binary, and looks up any type it does not
know (an enum) with a recursive query on pg_type, after reading and setting
the `jit` setting. Usage: asyncpg_client.py DSN. Exits non-zero with a
message on the first difference; prints ok at the end."""
import asyncio
import datetime
import decimal
import io
import json
import sys
import uuid

import asyncpg


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def same(label, got, want):
    if got != want or type(got) is not type(want):
        fail(f"{label}: got {got!r} ({type(got).__name__}), want {want!r} ({type(want).__name__})")


ROW = dict(
    id=1, i=42, big=10_000_000_000, n=decimal.Decimal("12345.67"), t="héllo 'quoted'", ok=True,
    ts=datetime.datetime(2024, 3, 15, 13, 45, 30, 123456, tzinfo=datetime.timezone.utc),
    d=datetime.date(2024, 2, 29), raw=b"\x00\x01\xfe\xff", doc='{"a": 1, "b": [1, 2, null]}',
    u=uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), f=1.5, tags=[1, 2, 3], names=["x", "y z", ""],
    m="happy", iv=datetime.timedelta(days=1, hours=2, minutes=3),
)
COLS = list(ROW)


async def main(dsn):
    c = await asyncpg.connect(dsn)
    if c.get_server_version().major != 15:
        fail(f"server version {c.get_server_version()}")
    await c.execute("DROP TABLE IF EXISTS apg_items; DROP TYPE IF EXISTS apg_mood")
    await c.execute("CREATE TYPE apg_mood AS ENUM ('sad', 'ok', 'happy')")
    await c.execute("""CREATE TABLE apg_items (id int PRIMARY KEY, i integer, big bigint, n numeric(12,2), t text,
        ok boolean, ts timestamptz, d date, raw bytea, doc jsonb, u uuid, f float8, tags int[], names text[],
        m apg_mood, iv interval)""")

    # Every parameter in binary, by the types tandem describes.
    await c.execute(f"INSERT INTO apg_items ({', '.join(COLS)}) VALUES ({', '.join(f'${k + 1}' for k in range(len(COLS)))})",
                    *ROW.values())
    r = await c.fetchrow(f"SELECT {', '.join(COLS)} FROM apg_items WHERE id = $1", 1)
    for col in COLS:
        got = r[col]
        if col == "u":
            got = uuid.UUID(str(got))  # asyncpg's own UUID class
        same(f"column {col}", got, ROW[col])

    # Explicit casts type the parameter; the enum is looked up in pg_type.
    same("$1::int", await c.fetchval("SELECT $1::int + 1", 41), 42)
    same("$1::apg_mood", await c.fetchval("SELECT $1::apg_mood", "sad"), "sad")
    same("enum column", await c.fetchval("SELECT m FROM apg_items WHERE m = $1", "happy"), "happy")
    same("= any($1)", await c.fetchval("SELECT count(*) FROM apg_items WHERE id = any($1)", [1, 2]), 1)
    same("$1::text[]", await c.fetchval("SELECT array_length($1::text[], 1)", ["a", "b"]), 2)
    try:
        await c.fetchval("SELECT $1::apg_mood", "meh")
        fail("an invalid enum label was accepted")
    except asyncpg.InvalidTextRepresentationError as e:
        same("invalid enum label SQLSTATE", e.sqlstate, "22P02")

    # executemany, a prepared statement's description, a cursor.
    await c.executemany("INSERT INTO apg_items (id, n, m) VALUES ($1, $2, $3)",
                        [(k, decimal.Decimal(k) / 4, "ok") for k in range(2, 7)])
    st = await c.prepare("SELECT id, n, m FROM apg_items WHERE id > $1 ORDER BY id")
    same("parameter types", [p.name for p in st.get_parameters()], ["int4"])
    same("column types", [a.type.name for a in st.get_attributes()], ["int4", "numeric", "apg_mood"])
    same("prepared rows", [tuple(x) for x in await st.fetch(4)],
         [(5, decimal.Decimal("1.25"), "ok"), (6, decimal.Decimal("1.50"), "ok")])
    async with c.transaction():
        ids = [row["id"] async for row in c.cursor("SELECT id FROM apg_items ORDER BY id", prefetch=2)]
    same("cursor", ids, [1, 2, 3, 4, 5, 6])

    # Transactions and savepoints.
    async with c.transaction():
        await c.execute("UPDATE apg_items SET i = i + 1 WHERE id = 1")
        try:
            async with c.transaction():
                await c.execute("UPDATE apg_items SET i = 0 WHERE id = 1")
                raise RuntimeError("roll back to the savepoint")
        except RuntimeError:
            pass
    same("savepoint rolled back", await c.fetchval("SELECT i FROM apg_items WHERE id = 1"), 43)

    # COPY both ways.
    n = await c.copy_records_to_table("apg_items", records=[(7, decimal.Decimal("1.25"), "sad"), (8, None, None)],
                                      columns=["id", "n", "m"])
    same("copy in", n, "COPY 2")
    buf = io.BytesIO()
    await c.copy_from_query("SELECT id, n, m FROM apg_items WHERE id >= 7 ORDER BY id", output=buf, format="csv")
    same("copy out", buf.getvalue().decode(), "7,1.25,sad\n8,,\n")

    # A codec of the application's own.
    await c.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    same("jsonb codec", await c.fetchval("SELECT doc FROM apg_items WHERE id = 1"), {"a": 1, "b": [1, 2, None]})

    # Errors keep their SQLSTATE and leave the connection usable.
    try:
        await c.execute("INSERT INTO apg_items (id) VALUES (1)")
        fail("duplicate key accepted")
    except asyncpg.UniqueViolationError as e:
        same("unique violation SQLSTATE", e.sqlstate, "23505")
    try:
        await c.fetch("SELEC 1")
        fail("syntax error accepted")
    except asyncpg.PostgresSyntaxError as e:
        same("syntax error SQLSTATE", e.sqlstate, "42601")
    same("after errors", await c.fetchval("SELECT count(*) FROM apg_items"), 8)

    # LISTEN / NOTIFY.
    got = asyncio.Queue()
    await c.add_listener("apg_chan", lambda conn, pid, channel, payload: got.put_nowait(payload))
    await c.execute("NOTIFY apg_chan, 'hello'")
    same("notification", await asyncio.wait_for(got.get(), 10), "hello")

    # A pool.
    pool = await asyncpg.create_pool(dsn, min_size=2, max_size=4)
    rows = await asyncio.gather(*(pool.fetchval("SELECT $1::int * 2", k) for k in range(8)))
    same("pool", rows, [k * 2 for k in range(8)])
    await pool.close()

    await c.execute("DROP TABLE apg_items; DROP TYPE apg_mood")
    await c.close()


asyncio.run(main(sys.argv[1]))
print("ok")
