// MikroORM 6 (@mikro-orm/postgresql, EntitySchema, no decorators) against
// tandem: the schema generator's createSchema, then getUpdateSchemaSQL()
// must find nothing to change (its introspection of what it created: a
// check-constraint enum, a deferrable foreign key, a text[] column, a
// unique and a composite index); a changed model (a column added, a type
// changed, an index added) gives exactly the statements PostgreSQL gives,
// updateSchema applies them and the diff is empty again; then a few
// EntityManager operations: persist and flush, populate, $overlap on a
// text[] property, a bad uuid in findOne (22P02), a unique violation.
// Tables mo_*; other clients' tables are skipped. Usage: node mikroorm.mjs
// DSN. Prints "ok", or "FAIL: ..." and exits non-zero.
import assert from "node:assert/strict"
import { randomUUID } from "node:crypto"
import { EntitySchema, Cascade } from "@mikro-orm/core"
import { MikroORM, UniqueConstraintViolationException } from "@mikro-orm/postgresql"

class Author {}
class Publisher {}
class Book {}

function entities(v) {
  const author = new EntitySchema({
    class: Author,
    tableName: "mo_author",
    properties: {
      id: { type: "number", primary: true, autoincrement: true },
      name: { type: "string", length: 100 },
      email: { type: "string", unique: true },
      born: { type: "Date", nullable: true },
      tags: { type: "string[]", nullable: true },
      books: { kind: "1:m", entity: "Book", mappedBy: "author", cascade: [Cascade.ALL] },
      ...(v === 2 ? { nickname: { type: "string", length: 50, nullable: true } } : {}),
    },
  })
  const publisher = new EntitySchema({
    class: Publisher,
    tableName: "mo_publisher",
    properties: {
      id: { type: "uuid", primary: true, onCreate: () => randomUUID() },
      name: { type: "string" },
      kind: { enum: true, items: ["local", "global"], default: "local" }, // a check constraint
    },
  })
  const book = new EntitySchema({
    class: Book,
    tableName: "mo_book",
    indexes: [
      { properties: ["title", "author"], name: "mo_book_title_author_idx" },
      ...(v === 2 ? [{ properties: ["price"], name: "mo_book_price_idx" }] : []),
    ],
    properties: {
      id: { type: "number", primary: true, autoincrement: true },
      title: { type: "string" },
      price: v === 1 ? { type: "decimal", precision: 10, scale: 2, default: 0 } : { type: "decimal", precision: 12, scale: 3, default: 0 },
      author: { kind: "m:1", entity: "Author", deleteRule: "cascade" },
      publisher: { kind: "m:1", entity: "Publisher", nullable: true, deferMode: "deferred" },
    },
  })
  return [author, publisher, book]
}

const init = (v) => MikroORM.init({
  clientUrl: process.argv[2],
  entities: entities(v),
  pool: { min: 0, max: 2 },
  allowGlobalContext: true,
  // The database is shared with the other clients' programs.
  schemaGenerator: { skipTables: [/^(?!(public\.)?mo_)/] },
})

// The statements of a diff, without MikroORM's wrapping and without
// dropping other clients' enum types (skipTables does not cover types).
const stmts = (sql) => sql.split(/;\n/).map((s) => s.trim().replace(/;$/, ""))
  .filter((s) => s && s !== "set names 'utf8'" && !/^drop type "(?!mo_)[^"]*"$/.test(s))

let orm = await init(1)
try {
  await orm.em.getConnection().execute("DROP TABLE IF EXISTS mo_book, mo_publisher, mo_author CASCADE")
  await orm.schema.createSchema()
  assert.deepEqual(stmts(await orm.schema.getUpdateSchemaSQL()), [], "diff right after createSchema")
  const fk = await orm.em.getConnection().execute(
    "SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'mo_book'::regclass AND contype IN ('f', 'c') ORDER BY conname")
  assert.deepEqual(fk, [
    { conname: "mo_book_author_id_foreign", def: "FOREIGN KEY (author_id) REFERENCES mo_author(id) ON UPDATE CASCADE ON DELETE CASCADE" },
    { conname: "mo_book_publisher_id_foreign", def: "FOREIGN KEY (publisher_id) REFERENCES mo_publisher(id) ON UPDATE CASCADE ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED" },
  ])
  await orm.close()

  orm = await init(2)
  assert.deepEqual(stmts(await orm.schema.getUpdateSchemaSQL()), [
    `alter table "mo_author" add column "nickname" varchar(50) null`,
    `alter table "mo_book" alter column "price" type numeric(12,3) using ("price"::numeric(12,3))`,
    `create index "mo_book_price_idx" on "mo_book" ("price")`,
  ], "diff after the model changed")
  // safe: would drop other clients' enum types otherwise (nothing of ours to drop).
  await orm.schema.updateSchema({ safe: true })
  assert.deepEqual(stmts(await orm.schema.getUpdateSchemaSQL()), [], "diff after updateSchema")

  // The unit of work.
  const em = orm.em.fork()
  const ann = em.create(Author, { name: "Ann", email: "ann@x", tags: ["a", "y,z"], born: new Date("1980-02-03T00:00:00Z") })
  const bob = em.create(Author, { name: "Bob", email: "bob@x", tags: ["b"] })
  const pub = em.create(Publisher, { name: "Pub" })
  em.create(Book, { title: "B1", price: "11.50", author: ann, publisher: pub })
  em.create(Book, { title: "B2", author: ann })
  em.create(Book, { title: "B3", price: "1.25", author: bob })
  await em.flush()
  assert.deepEqual([ann.id, bob.id, pub.kind], [1, 2, "local"])

  const em2 = orm.em.fork()
  const authors = await em2.find(Author, {}, { populate: ["books", "books.publisher"], orderBy: { id: "asc", books: { id: "asc" } } })
  assert.deepEqual(authors.map((a) => `${a.name}:${a.books.getItems().map((b) => `${b.title}/${b.price}/${b.publisher ? b.publisher.name : "-"}`).join(",")}`),
    ["Ann:B1/11.500/Pub,B2/0.000/-", "Bob:B3/1.250/-"], "populate")
  assert.equal(authors[0].born.toISOString(), "1980-02-03T00:00:00.000Z")
  const overlap = await em2.find(Author, { tags: { $overlap: ["y,z", "q"] } })
  assert.deepEqual(overlap.map((a) => a.email), ["ann@x"], "$overlap")
  const contains = await em2.find(Author, { tags: { $contains: ["b"] } })
  assert.deepEqual(contains.map((a) => a.email), ["bob@x"], "$contains")
  authors[1].nickname = "bobby"
  authors[1].tags = [...authors[1].tags, "c"]
  await em2.flush()
  const b = await orm.em.fork().findOneOrFail(Author, { nickname: "bobby" })
  assert.deepEqual(b.tags, ["b", "c"])
  assert.equal(await orm.em.fork().count(Book, { price: { $gt: 1 } }), 2)

  await assert.rejects(orm.em.fork().findOne(Publisher, { id: "not-a-uuid" }), (e) => e.code === "22P02")
  const em3 = orm.em.fork()
  em3.create(Author, { name: "Dup", email: "ann@x" })
  await assert.rejects(em3.flush(), (e) => e instanceof UniqueConstraintViolationException && e.code === "23505" && e.constraint === "mo_author_email_unique")
  const em4 = orm.em.fork()
  em4.create(Publisher, { name: "Bad", kind: "galactic" })
  await assert.rejects(em4.flush(), (e) => e.code === "23514" && e.constraint === "mo_publisher_kind_check")

  em2.remove(authors[0])
  await em2.flush()
  assert.equal(await orm.em.fork().count(Book, {}), 1, "cascade")
  await orm.em.getConnection().execute("DROP TABLE mo_book, mo_publisher, mo_author")
  console.log("ok")
} catch (e) {
  console.log("FAIL: " + (e.stack || e))
  process.exitCode = 1
} finally {
  await orm.close()
}
