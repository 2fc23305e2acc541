// TypeORM (0.3, on node-postgres) against tandem: synchronize creates the
// schema, then reads it back (information_schema, pg_catalog, regtype) and
// must find nothing to change (an enum column among them: CREATE TYPE ...
// AS ENUM, read back from pg_enum); save with a relation (a multi-row
// INSERT with DEFAULT), find with relations, skip/take. Usage: node
// typeorm.js DSN.
// Prints "ok", or "FAIL: ..." and exits non-zero.
require("reflect-metadata");
const { Client } = require("pg");
const { DataSource, EntitySchema } = require("typeorm");

const Author = new EntitySchema({
  name: "Author", tableName: "orm_authors",
  columns: {
    id: { type: Number, primary: true, generated: true },
    name: { type: "varchar", length: 100, unique: true },
    born: { type: "date", nullable: true },
  },
  relations: { books: { type: "one-to-many", target: "Book", inverseSide: "author" } },
});
const Book = new EntitySchema({
  name: "Book", tableName: "orm_books",
  columns: {
    id: { type: Number, primary: true, generated: true },
    title: { type: "text" },
    pages: { type: "int", default: 0 },
    price: { type: "numeric", precision: 8, scale: 2, nullable: true },
    created: { type: "timestamptz", createDate: true },
    format: { type: "enum", enum: ["paper", "ebook"], default: "paper" },
  },
  relations: { author: { type: "many-to-one", target: "Author", inverseSide: "books", joinColumn: true, onDelete: "CASCADE" } },
  indices: [{ columns: ["title"] }],
});

async function main() {
  const c = new Client({ connectionString: process.argv[2] });
  await c.connect();
  await c.query("DROP TABLE IF EXISTS orm_books, orm_authors CASCADE");
  await c.query("DROP TYPE IF EXISTS orm_books_format_enum");
  await c.end();
  for (let round = 0; round < 2; round++) {
    const ds = new DataSource({ type: "postgres", url: process.argv[2], entities: [Author, Book], synchronize: true, logging: false });
    await ds.initialize();
    // What synchronize would change now: nothing.
    const log = await ds.driver.createSchemaBuilder().log();
    if (log.upQueries.length) {
      throw new Error("synchronize wants changes on an unchanged schema: " + log.upQueries.map((q) => q.query).join("; "));
    }
    if (round === 0) {
      const a = await ds.getRepository("Author").save({ name: "Ursula" });
      await ds.getRepository("Book").save([
        { title: "The Dispossessed", pages: 387, price: "9.50", author: a },
        { title: "The Lathe of Heaven", pages: 184, author: a, format: "ebook" },
      ]);
    }
    const got = await ds.getRepository("Author").find({ relations: { books: true }, where: { name: "Ursula" } });
    if (got.length !== 1 || got[0].books.length !== 2) throw new Error("read back " + JSON.stringify(got));
    const page = await ds.getRepository("Book").find({ order: { pages: "ASC" }, skip: 1, take: 1 });
    if (page.length !== 1 || page[0].pages !== 387 || page[0].price !== "9.50" || page[0].format !== "paper") throw new Error("page 2: " + JSON.stringify(page));
    await ds.destroy();
  }
  console.log("ok");
}

main().catch((e) => {
  console.log("FAIL:", e.message);
  process.exit(1);
});
