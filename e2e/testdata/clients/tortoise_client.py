"""Tortoise ORM (on asyncpg) against tandem: generate_schemas (a unique
column, a JSONField, a foreign key ON DELETE CASCADE, a decimal, a
datetime with auto_now_add, a uuid), bulk_create, filters across the
relation, annotate with Count, an F() update, a rolled-back transaction,
prefetch_related, Q objects with startswith (LIKE $1 ESCAPE '\\': asyncpg
needs the parameter typed), a cascading delete. Usage: python3
tortoise_client.py DSN. Prints "ok", or "FAIL: ..." and exits non-zero."""
import decimal
import sys
from urllib.parse import urlparse

from tortoise import Tortoise, fields, run_async
from tortoise.expressions import F, Q
from tortoise.functions import Count
from tortoise.models import Model
from tortoise.transactions import in_transaction


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class TtTeam(Model):
    id = fields.IntField(primary_key=True)
    name = fields.CharField(max_length=50, unique=True)
    meta = fields.JSONField(default=dict)


class TtPlayer(Model):
    id = fields.BigIntField(primary_key=True)
    name = fields.CharField(max_length=50)
    team = fields.ForeignKeyField("models.TtTeam", related_name="players", on_delete=fields.CASCADE)
    score = fields.DecimalField(max_digits=8, decimal_places=2, default=0)
    joined = fields.DatetimeField(auto_now_add=True)
    uid = fields.UUIDField(null=True)


async def main():
    u = urlparse(sys.argv[1])
    await Tortoise.init(db_url=u._replace(scheme="asyncpg", query="").geturl(), modules={"models": ["__main__"]})
    conn = Tortoise.get_connection("default")
    await conn.execute_script('DROP TABLE IF EXISTS "ttplayer"; DROP TABLE IF EXISTS "ttteam";')
    await Tortoise.generate_schemas()
    a = await TtTeam.create(name="a", meta={"x": 1})
    b = await TtTeam.create(name="b")
    await TtPlayer.bulk_create([TtPlayer(name=f"p{i}", team=a if i < 3 else b, score=decimal.Decimal(i) / 2) for i in range(5)])
    if [await TtPlayer.filter(team__name="a").count(), await TtPlayer.filter(score__gte=1).count()] != [3, 3]:
        fail("filters")
    if await TtTeam.annotate(n=Count("players")).order_by("name").values_list("name", "n") != [("a", 3), ("b", 2)]:
        fail("annotate")
    await TtPlayer.filter(name="p1").update(score=F("score") + 10)
    if [str(p.score) for p in await TtPlayer.all().order_by("id")] != ["0.00", "10.50", "1.00", "1.50", "2.00"]:
        fail(f"F() update: {[str(p.score) for p in await TtPlayer.all().order_by('id')]}")
    try:
        async with in_transaction():
            await TtPlayer.filter(name="p0").delete()
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    if await TtPlayer.all().count() != 5:
        fail("rolled-back delete")
    p = await TtPlayer.get(name="p2").prefetch_related("team")
    if p.team.name != "a":
        fail("prefetch_related")
    got = await TtPlayer.filter(Q(name__startswith="p") & ~Q(name="p3")).order_by("-score").limit(2).values_list("name", flat=True)
    if got != ["p1", "p4"]:
        fail(f"startswith: {got}")
    await TtTeam.filter(name="b").delete()
    if await TtPlayer.all().count() != 3:
        fail("cascading delete")
    await conn.execute_script('DROP TABLE "ttplayer"; DROP TABLE "ttteam";')
    print("ok")


run_async(main())
