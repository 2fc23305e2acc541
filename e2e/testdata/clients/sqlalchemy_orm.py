"""SQLAlchemy 2 against tandem: create_all with foreign keys and an Enum
column (CREATE TYPE ... AS ENUM), ORM insert and query, reflection with
inspect() and MetaData.reflect(). Through psycopg 3, or through asyncpg with SQLAlchemy's asyncio
engine (the same ORM code, run in its greenlet as AsyncSession.run_sync
runs it). Usage:
sqlalchemy_orm.py postgresql+psycopg://user:pw@host:port/db
sqlalchemy_orm.py postgresql+asyncpg://user:pw@host:port/db"""
import datetime
import decimal
import enum
import sys

from sqlalchemy import (Boolean, DateTime, Enum, ForeignKey, Numeric, String, create_engine, func, inspect, select)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


class Base(DeclarativeBase):
    pass


class Format(enum.Enum):
    paper = "paper"
    ebook = "ebook"
    audio = "audio"


class Author(Base):
    __tablename__ = "sa_author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    books: Mapped[list["Book"]] = relationship(back_populates="author", cascade="all, delete-orphan")


class Book(Base):
    __tablename__ = "sa_book"
    id: Mapped[int] = mapped_column(primary_key=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("sa_author.id"), index=True)
    title: Mapped[str] = mapped_column(String(200))
    price: Mapped[decimal.Decimal] = mapped_column(Numeric(8, 2))
    published: Mapped[datetime.datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    format: Mapped[Format] = mapped_column(Enum(Format, name="sa_format"), default=Format.paper)
    author: Mapped[Author] = relationship(back_populates="books")


def run(engine):
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    Base.metadata.create_all(engine)  # again: the enum type and the tables exist, nothing to do

    with Session(engine) as s:
        a = Author(name="Le Guin", books=[Book(title="The Dispossessed", price=decimal.Decimal("9.99")),
                                          Book(title="Lathe of Heaven", price=decimal.Decimal("7.50"), format=Format.ebook)])
        b = Author(name="Lem", active=False, books=[Book(title="Solaris", price=decimal.Decimal("12.00"))])
        s.add_all([a, b])
        s.commit()
        if a.id is None or a.books[0].id is None:
            fail("ids not assigned (RETURNING)")

    with Session(engine) as s:
        rows = s.execute(select(Author.name, func.count(Book.id), func.sum(Book.price))
                         .join(Book).group_by(Author.name).order_by(Author.name)).all()
        if [tuple(r) for r in rows] != [("Le Guin", 2, decimal.Decimal("17.49")), ("Lem", 1, decimal.Decimal("12.00"))]:
            fail(f"aggregate query: {rows!r}")
        lem = s.scalars(select(Author).where(Author.name == "Lem")).one()
        if lem.active is not False or [bk.title for bk in lem.books] != ["Solaris"]:
            fail("relationship load")
        bk = s.scalars(select(Book).where(Book.title.ilike("%heaven"))).one()
        if not isinstance(bk.published, datetime.datetime) or bk.published.tzinfo is None:
            fail(f"server default timestamptz: {bk.published!r}")
        if bk.format is not Format.ebook or s.scalar(select(func.count()).select_from(Book).where(Book.format == Format.paper)) != 2:
            fail(f"enum column: {bk.format!r}")
        bk.price = decimal.Decimal("8.25")
        s.delete(lem)
        s.commit()

    with Session(engine) as s:
        if s.scalar(select(func.count()).select_from(Book)) != 2:
            fail("delete cascade")
        if s.scalar(select(Book.price).where(Book.title == "Lathe of Heaven")) != decimal.Decimal("8.25"):
            fail("update")

    insp = inspect(engine)
    tables = set(insp.get_table_names())
    if not {"sa_author", "sa_book"} <= tables:
        fail(f"get_table_names: {tables}")
    cols = {c["name"]: c for c in insp.get_columns("sa_book")}
    if list(cols) != ["id", "author_id", "title", "price", "published", "format"]:
        fail(f"get_columns: {list(cols)}")
    want_types = {"id": "INTEGER", "author_id": "INTEGER", "title": "VARCHAR(200)", "price": "NUMERIC(8, 2)", "published": "TIMESTAMP"}
    for name, t in want_types.items():
        if str(cols[name]["type"]) != t:
            fail(f"column {name} type {cols[name]['type']}, want {t}")
    if list(getattr(cols["format"]["type"], "enums", [])) != ["paper", "ebook", "audio"]:
        fail(f"enum column reflected as {cols['format']['type']!r}")
    if [(e["name"], e["labels"]) for e in insp.get_enums()] != [("sa_format", ["paper", "ebook", "audio"])]:
        fail(f"get_enums: {insp.get_enums()}")
    if cols["title"]["nullable"] or not cols["published"].get("default"):
        fail(f"nullable/default: {cols['title']} {cols['published']}")
    pk = insp.get_pk_constraint("sa_book")
    if pk["constrained_columns"] != ["id"]:
        fail(f"get_pk_constraint: {pk}")
    fks = insp.get_foreign_keys("sa_book")
    if len(fks) != 1 or fks[0]["referred_table"] != "sa_author" or fks[0]["constrained_columns"] != ["author_id"] or fks[0]["referred_columns"] != ["id"]:
        fail(f"get_foreign_keys: {fks}")
    idx = insp.get_indexes("sa_book")
    if not any(i["column_names"] == ["author_id"] for i in idx):
        fail(f"get_indexes: {idx}")
    uniq = insp.get_unique_constraints("sa_author")
    if not any(u["column_names"] == ["name"] for u in uniq) and not any(i["unique"] and i["column_names"] == ["name"] for i in insp.get_indexes("sa_author")):
        fail(f"unique on sa_author.name not reflected: {uniq}")
    # Whole-table reflection (MetaData.reflect: SQLAlchemy 2.1 reads each
    # table's options too, current_setting('default_table_access_method'),
    # pg_am, pg_tablespace, pg_inherits; pandas' read_sql_table uses it).
    from sqlalchemy import MetaData
    meta = MetaData()
    meta.reflect(bind=engine, only=["sa_author", "sa_book"])
    rb = meta.tables["sa_book"]
    if [c.name for c in rb.columns] != list(cols) or [fk.column.table.name for fk in rb.foreign_keys] != ["sa_author"]:
        fail(f"MetaData.reflect: {[c.name for c in rb.columns]} {[fk.target_fullname for fk in rb.foreign_keys]}")
    with engine.connect() as c:
        if c.scalar(select(func.count()).select_from(rb)) != 2:
            fail("a query over a reflected table")
    Base.metadata.drop_all(engine)
    if "sa_book" in inspect(engine).get_table_names() or inspect(engine).get_enums():
        fail("drop_all")


url = sys.argv[1]
if "+asyncpg" in url:
    import asyncio

    from sqlalchemy.ext.asyncio import create_async_engine
    from sqlalchemy.util import greenlet_spawn

    async def main():
        aengine = create_async_engine(url)
        try:
            await greenlet_spawn(run, aengine.sync_engine)
        finally:
            await aengine.dispose()

    asyncio.run(main())
else:
    run(create_engine(url))
print("ok")
