// drizzle-kit against tandem: push a schema (enum, serial and bigserial,
// a unique constraint, a foreign key with ON DELETE CASCADE, numeric(8,2),
// timestamptz with a default, a text array, two indexes, one DESC NULLS
// LAST), push it again (its
// introspection of what it created must find nothing to change), change it
// (a column added, a varchar widened, a table added) and push twice more,
// then pull the schema back. Usage: node drizzle.js DSN; prints ok.
const { spawnSync } = require("child_process")
const fs = require("fs")
const os = require("os")
const path = require("path")
const { Client } = require("pg")

function fail(msg) {
  console.log("FAIL: " + msg)
  process.exit(1)
}

const dsn = process.argv[2].replace(/\?.*$/, "")
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tandem-drizzle-"))
const kit = path.join(__dirname, "node_modules", "drizzle-kit", "bin.cjs")

function run(args, schema) {
  const cfg = path.join(dir, "drizzle.config.json")
  fs.writeFileSync(cfg, JSON.stringify({ dialect: "postgresql", schema, out: path.join(dir, "out"),
    dbCredentials: { url: dsn }, tablesFilter: ["dzt_*"] }))
  const r = spawnSync(process.execPath, [kit, ...args, "--config", cfg], { cwd: __dirname, encoding: "utf8", timeout: 120000 })
  // eslint-disable-next-line no-control-regex
  const out = ((r.stdout || "") + (r.stderr || "")).replace(/\x1b\[[0-9;]*[A-Za-z]/g, "")
  // A word, not a substring: pull names its migration file after two
  // random words, and one of them ("terror") holds "error".
  if (r.status !== 0 || /\berror\b/i.test(out) || /[a-z]Error\b/.test(out)) fail(`drizzle-kit ${args.join(" ")}: exit ${r.status}\n${out}`)
  return out
}

async function main() {
  const c = new Client({ connectionString: dsn })
  await c.connect()
  await c.query("DROP TABLE IF EXISTS dzt_note, dzt_book, dzt_author")
  await c.query("DROP TYPE IF EXISTS dzt_fmt")

  const schema = path.join(__dirname, "drizzle", "schema.ts")
  let out = run(["push", "--force", "--verbose"], schema)
  if (!out.includes("Changes applied")) fail("first push: " + out)
  out = run(["push", "--force", "--verbose"], schema)
  if (!out.includes("No changes detected")) fail("second push found changes in what it created:\n" + out)

  const changed = path.join(dir, "schema2.ts")
  fs.writeFileSync(changed, fs.readFileSync(schema, "utf8")
    .replace("name: varchar({ length: 50 })", "name: varchar({ length: 80 })")
    .replace("tags: text().array(),", "tags: text().array(),\n  pages: integer(),")
    .replace(/from "drizzle-orm\/pg-core"/, 'from "' + path.join(__dirname, "node_modules", "drizzle-orm", "pg-core") + '"') +
    '\nexport const dztNote = pgTable("dzt_note", { id: serial().primaryKey(), body: text().notNull() })\n')
  out = run(["push", "--force", "--verbose"], changed)
  for (const want of ['ALTER TABLE "dzt_author" ALTER COLUMN "name" SET DATA TYPE varchar(80)', 'ALTER TABLE "dzt_book" ADD COLUMN "pages" integer', 'CREATE TABLE "dzt_note"']) {
    if (!out.includes(want)) fail(`changed push: no ${want}:\n${out}`)
  }
  out = run(["push", "--force", "--verbose"], changed)
  if (!out.includes("No changes detected")) fail("push after the change found changes:\n" + out)

  await c.query("INSERT INTO dzt_author (name) VALUES ('Le Guin')")
  await c.query("INSERT INTO dzt_book (author_id, title, price, tags) VALUES (1, 'The Dispossessed', 9.99, '{sf,classic}')")
  const r = await c.query("SELECT b.id, b.fmt, b.tags, a.active FROM dzt_book b JOIN dzt_author a ON a.id = b.author_id")
  if (r.rows.length !== 1 || r.rows[0].fmt !== "paper" || r.rows[0].tags[1] !== "classic" || r.rows[0].active !== true) fail("rows: " + JSON.stringify(r.rows))

  run(["pull"], changed)
  const pulled = fs.readFileSync(path.join(dir, "out", "schema.ts"), "utf8")
  for (const want of ['pgEnum("dzt_fmt", [\'paper\', \'ebook\'])', "id: serial().primaryKey().notNull()", 'id: bigserial({ mode: "bigint" })',
    'unique("dzt_author_name_key").on(table.name)', "tags: text().array()", 'index("dzt_book_title").using("btree", table.title.asc().nullsLast().op("text_ops"))',
    '.onDelete("cascade")', "price: numeric({ precision: 8, scale:  2 })", "published: timestamp({ withTimezone: true, mode: 'string' }).defaultNow()"]) {
    if (!pulled.includes(want)) fail(`pull: no ${want} in\n${pulled}`)
  }
  await c.query("DROP TABLE dzt_note, dzt_book, dzt_author")
  await c.query("DROP TYPE dzt_fmt")
  await c.end()
  fs.rmSync(dir, { recursive: true, force: true })
  console.log("ok")
}

main().catch((e) => fail(e.stack || String(e)))
