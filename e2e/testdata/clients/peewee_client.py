"""peewee (3, with playhouse's PostgreSQL extensions, on psycopg2) against
tandem: create_tables of a model with a jsonb field and an array field
(peewee gives each a gin index) and a foreign key, insert_many, a join
with GROUP BY, jsonb ->> and array containment in WHERE, a rolled-back
atomic block, an upsert (ON CONFLICT ... DO UPDATE), IntegrityError, the
migrator (add, index and rename a column) and introspection
(playhouse.reflection: columns, foreign keys through
information_schema.referential_constraints, indexes). Usage: python3
peewee_client.py DSN (postgres://user:password@host:port/db). Prints
"ok", or "FAIL: ..." and exits non-zero."""
import datetime
import decimal
import sys
from urllib.parse import unquote, urlparse

from peewee import JOIN, CharField, DateField, DecimalField, ForeignKeyField, IntegrityError, Model, fn
from playhouse.migrate import PostgresqlMigrator, migrate
from playhouse.postgres_ext import ArrayField, BinaryJSONField, PostgresqlExtDatabase
from playhouse.reflection import Introspector


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


u = urlparse(sys.argv[1])
db = PostgresqlExtDatabase(u.path.lstrip("/"), user=unquote(u.username or ""), password=unquote(u.password or ""),
                           host=u.hostname, port=u.port, sslmode="disable")


class Base(Model):
    class Meta:
        database = db


class PwPerson(Base):
    name = CharField(unique=True)
    born = DateField(null=True)
    meta = BinaryJSONField(default=dict)
    tags = ArrayField(CharField, default=list)
    balance = DecimalField(max_digits=10, decimal_places=2, default=0)


class PwPet(Base):
    owner = ForeignKeyField(PwPerson, backref="pets", on_delete="CASCADE")
    kind = CharField(index=True)


db.connect()
db.drop_tables([PwPet, PwPerson])
db.create_tables([PwPerson, PwPet])
a = PwPerson.create(name="ann", born=datetime.date(1990, 5, 1), meta={"x": 1, "ok": True}, tags=["a", "b"], balance=decimal.Decimal("10.50"))
b = PwPerson.create(name="bob")
PwPet.insert_many([{"owner": a, "kind": "cat"}, {"owner": a, "kind": "dog"}, {"owner": b, "kind": "cat"}]).execute()
q = (PwPerson.select(PwPerson.name, fn.COUNT(PwPet.id).alias("n")).join(PwPet, JOIN.LEFT_OUTER)
     .group_by(PwPerson.name).order_by(PwPerson.name))
if [(p.name, p.n) for p in q] != [("ann", 2), ("bob", 1)]:
    fail(f"join with GROUP BY: {[(p.name, p.n) for p in q]}")
# ->> is text: a JSON number and true compare with their text.
if PwPerson.select().where(PwPerson.meta["x"] == "1").count() != 1 or PwPerson.select().where(PwPerson.meta["ok"] == "true").count() != 1:
    fail("jsonb ->> compared as text")
if PwPerson.select().where(PwPerson.tags.contains("a")).count() != 1 or PwPerson.select().where(PwPerson.meta.contains({"x": 1})).count() != 1:
    fail("array / jsonb containment")
with db.atomic() as t:
    PwPerson.update(balance=PwPerson.balance + 1).execute()
    t.rollback()
if [str(p.balance) for p in PwPerson.select().order_by(PwPerson.id)] != ["10.50", "0.00"]:
    fail(f"rolled-back update: {[str(p.balance) for p in PwPerson.select().order_by(PwPerson.id)]}")
PwPerson.insert(name="ann", balance=5).on_conflict(conflict_target=[PwPerson.name], update={PwPerson.balance: PwPerson.balance + 5}).execute()
if PwPerson.get(PwPerson.name == "ann").balance != decimal.Decimal("15.50"):
    fail(f"upsert: {PwPerson.get(PwPerson.name == 'ann').balance}")
try:
    PwPerson.create(name="bob")
    fail("duplicate name accepted")
except IntegrityError:
    pass
mig = PostgresqlMigrator(db)
migrate(mig.add_column("pwperson", "nick", CharField(null=True)), mig.add_index("pwperson", ("nick",), False),
        mig.rename_column("pwperson", "nick", "nickname"))
models = Introspector.from_database(db).generate_models(table_names=["pwperson", "pwpet"])
if sorted(models["pwperson"]._meta.fields) != ["balance", "born", "id", "meta", "name", "nickname", "tags"]:
    fail(f"introspected fields: {sorted(models['pwperson']._meta.fields)}")
fks = db.get_foreign_keys("pwpet")
if [(f.column, f.dest_table, f.dest_column) for f in fks] != [("owner_id", "pwperson", "id")]:
    fail(f"foreign keys: {fks}")
idx = {i.name for i in db.get_indexes("pwperson")}
if not {"pwperson_name", "pwperson_meta", "pwperson_tags", "pwperson_pkey"} <= idx:
    fail(f"indexes: {idx}")
db.drop_tables([PwPet, PwPerson])
print("ok")
