// Knex (3, on node-postgres) against tandem: migrations from a source in
// code (latest, rollback, latest) creating tables with increments and
// bigIncrements, a native enum, jsonb, text[] and integer[] columns,
// foreign keys with ON DELETE CASCADE, unique and partial indexes; an
// alterTable migration (add, rename, alter and drop a column; dropPrimary
// then primary again; a column added unique); createView with a column
// list; hasTable, hasColumn and columnInfo (defaults as PostgreSQL prints
// them); insert returning, onConflict().merge() and .ignore(); an integer[]
// bound from a JS array and found again with = and ANY; numeric division
// rounded; jsonExtract and whereJsonPath (jsonb_path_query); a transaction
// rolled back, after which the serial goes on (no id reused); a foreign-key
// violation's constraint on a table with two foreign keys. Tables kx_*.
// Usage: node knex.js DSN. Prints "ok", or "FAIL: ..." and exits non-zero.
const assert = require("assert/strict")

const knex = require("knex")({ client: "pg", connection: process.argv[2], pool: { min: 0, max: 2 } })

const migrations = {
  "001_init": {
    async up(k) {
      await k.schema.createTable("kx_users", (t) => {
        t.increments("id")
        t.string("email", 255).notNullable().unique()
        t.string("name").notNullable()
        t.enu("role", ["admin", "member", "guest"], { useNative: true, enumName: "kx_role" }).notNullable().defaultTo("member")
        t.decimal("balance", 12, 2).notNullable().defaultTo(0)
        t.jsonb("settings").notNullable().defaultTo("{}")
        t.specificType("labels", "text[]").defaultTo("{}")
        t.specificType("ia", "integer[]")
      })
      await k.schema.createTable("kx_posts", (t) => {
        t.bigIncrements("id")
        t.integer("user_id").notNullable().references("id").inTable("kx_users").onDelete("CASCADE")
        t.integer("editor_id").references("id").inTable("kx_users").onDelete("SET NULL")
        t.string("title", 200).notNullable()
        t.decimal("price", 10, 2)
        t.timestamp("published_at", { useTz: true })
        t.index(["title"], "kx_posts_published_title_idx", { predicate: k.whereNotNull("published_at") })
      })
      await k.schema.createTable("kx_post_tags", (t) => {
        t.bigInteger("post_id").notNullable().references("kx_posts.id").onDelete("CASCADE")
        t.string("tag", 20).notNullable()
        t.primary(["post_id", "tag"])
      })
    },
    async down(k) {
      await k.schema.dropTableIfExists("kx_post_tags")
      await k.schema.dropTableIfExists("kx_posts")
      await k.schema.dropTableIfExists("kx_users")
      await k.raw("DROP TYPE IF EXISTS kx_role")
    },
  },
  "002_alter": {
    async up(k) {
      await k.schema.alterTable("kx_users", (t) => {
        t.string("nickname", 40)
        t.renameColumn("name", "full_name")
        t.integer("legacy")
      })
      await k.schema.alterTable("kx_users", (t) => {
        t.decimal("balance", 14, 4).notNullable().defaultTo(0).alter()
        t.string("nickname", 80).notNullable().defaultTo("anon").alter()
        t.dropColumn("legacy")
        t.string("handle", 30).unique()
      })
      await k.schema.alterTable("kx_post_tags", (t) => { t.dropPrimary() })
      await k.schema.alterTable("kx_post_tags", (t) => { t.primary(["tag", "post_id"], { constraintName: "kx_post_tags_pk2" }) })
      await k.schema.createView("kx_post_counts", (v) => {
        v.columns(["user_id", "n_posts"])
        v.as(k("kx_posts").select("user_id").count("*").groupBy("user_id"))
      })
    },
    async down(k) {
      await k.schema.dropView("kx_post_counts")
      await k.schema.alterTable("kx_post_tags", (t) => { t.dropPrimary("kx_post_tags_pk2") })
      await k.schema.alterTable("kx_post_tags", (t) => { t.primary(["post_id", "tag"]) })
      await k.schema.alterTable("kx_users", (t) => {
        t.dropColumn("handle")
        t.renameColumn("full_name", "name")
        t.dropColumn("nickname")
        t.decimal("balance", 12, 2).notNullable().defaultTo(0).alter()
      })
    },
  },
}
const mcfg = {
  tableName: "kx_migrations",
  migrationSource: {
    getMigrations: async () => Object.keys(migrations),
    getMigrationName: (m) => m,
    getMigration: async (m) => migrations[m],
  },
}

async function expectError(p, code, constraint) {
  try {
    await p
  } catch (e) {
    assert.equal(e.code, code, `${e.message}`)
    if (constraint !== undefined) assert.equal(e.constraint, constraint, `${e.message}`)
    return e
  }
  throw new Error(`no error, want ${code} ${constraint || ""}`)
}

async function main() {
  await cleanup()

  // Migrations: latest, rollback all, latest.
  const [batch, run] = await knex.migrate.latest(mcfg)
  assert.deepEqual([batch, run], [1, ["001_init", "002_alter"]], "migrate.latest")
  assert.equal(await knex.schema.hasTable("kx_users"), true)
  assert.equal(await knex.schema.hasColumn("kx_users", "full_name"), true)
  assert.equal(await knex.schema.hasColumn("kx_users", "name"), false)
  const [, rolled] = await knex.migrate.rollback(mcfg, true)
  assert.deepEqual(rolled, ["002_alter", "001_init"], "rollback")
  assert.equal(await knex.schema.hasTable("kx_users"), false)
  assert.equal((await knex.raw("SELECT count(*)::int AS n FROM pg_type WHERE typname = 'kx_role'")).rows[0].n, 0, "enum type dropped")
  assert.deepEqual((await knex.migrate.latest(mcfg))[1], ["001_init", "002_alter"], "migrate.latest again")
  assert.equal(await knex.migrate.currentVersion(mcfg), "002", "currentVersion")

  // What the schema looks like now.
  const ci = await knex("kx_users").columnInfo()
  assert.deepEqual(Object.keys(ci).sort(), ["balance", "email", "full_name", "handle", "ia", "id", "labels", "nickname", "role", "settings"])
  assert.deepEqual(ci.id, { type: "integer", maxLength: null, nullable: false, defaultValue: "nextval('kx_users_id_seq'::regclass)" })
  assert.deepEqual(ci.role, { type: "USER-DEFINED", maxLength: null, nullable: false, defaultValue: "'member'::kx_role" })
  assert.deepEqual(ci.balance, { type: "numeric", maxLength: null, nullable: false, defaultValue: "'0'::numeric" })
  assert.deepEqual(ci.nickname, { type: "character varying", maxLength: 80, nullable: false, defaultValue: "'anon'::character varying" })
  assert.deepEqual(ci.settings, { type: "jsonb", maxLength: null, nullable: false, defaultValue: "'{}'::jsonb" })
  assert.deepEqual(ci.labels, { type: "ARRAY", maxLength: null, nullable: true, defaultValue: "'{}'::text[]" })
  assert.deepEqual(await knex("kx_posts").columnInfo("id"), { type: "bigint", maxLength: null, nullable: false, defaultValue: "nextval('kx_posts_id_seq'::regclass)" })
  const idx = (await knex.raw(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('kx_users', 'kx_posts', 'kx_post_tags') ORDER BY indexname`)).rows
  assert.deepEqual(idx.map((r) => r.indexname), ["kx_post_tags_pk2", "kx_posts_pkey", "kx_posts_published_title_idx", "kx_users_email_unique", "kx_users_handle_unique", "kx_users_pkey"])
  assert.equal(idx[2].indexdef, "CREATE INDEX kx_posts_published_title_idx ON public.kx_posts USING btree (title) WHERE (published_at IS NOT NULL)")
  assert.equal(idx[0].indexdef, "CREATE UNIQUE INDEX kx_post_tags_pk2 ON public.kx_post_tags USING btree (tag, post_id)")
  const fks = (await knex.raw(`SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'kx_posts'::regclass AND contype = 'f' ORDER BY conname`)).rows
  assert.deepEqual(fks, [
    { conname: "kx_posts_editor_id_foreign", def: "FOREIGN KEY (editor_id) REFERENCES kx_users(id) ON DELETE SET NULL" },
    { conname: "kx_posts_user_id_foreign", def: "FOREIGN KEY (user_id) REFERENCES kx_users(id) ON DELETE CASCADE" },
  ])

  // Inserts.
  const users = await knex("kx_users").insert([
    { email: "ann@x", full_name: "Ann", role: "admin", balance: "100.50", settings: { theme: "dark", langs: ["en", "fr"] }, labels: ["a", "b"], ia: [3, 1, 2] },
    { email: "bob@x", full_name: "Bob", settings: JSON.stringify({ theme: "light" }), ia: [] },
  ]).returning(["id", "role", "balance", "nickname", "labels", "ia"])
  assert.deepEqual(users, [
    { id: 1, role: "admin", balance: "100.5000", nickname: "anon", labels: ["a", "b"], ia: [3, 1, 2] },
    { id: 2, role: "member", balance: "0.0000", nickname: "anon", labels: [], ia: [] },
  ])
  await expectError(knex("kx_users").insert({ email: "ann@x", full_name: "Dup" }), "23505", "kx_users_email_unique")
  await expectError(knex("kx_users").insert({ email: "c@x", full_name: "C", handle: "h" }).then(() =>
    knex("kx_users").insert({ email: "d@x", full_name: "D", handle: "h" })), "23505", "kx_users_handle_unique")

  // The integer[] column, bound from a JS array.
  assert.deepEqual(await knex("kx_users").where("ia", [3, 1, 2]).pluck("email"), ["ann@x"], "where ia = ?")
  assert.deepEqual(await knex("kx_users").whereRaw("? = ANY(ia)", [2]).pluck("email"), ["ann@x"], "? = ANY(ia)")
  assert.deepEqual(await knex("kx_users").whereRaw("? = ANY(labels)", ["b"]).pluck("email"), ["ann@x"], "? = ANY(labels)")

  // onConflict: merge and ignore.
  const merged = await knex("kx_users").insert({ email: "bob@x", full_name: "Robert", balance: 5 }).onConflict("email").merge(["full_name", "balance"]).returning(["id", "full_name", "balance"])
  assert.deepEqual(merged, [{ id: 2, full_name: "Robert", balance: "5.0000" }], "onConflict merge")
  const ignored = await knex("kx_users").insert({ email: "bob@x", full_name: "Bobby" }).onConflict("email").ignore().returning("id")
  assert.deepEqual(ignored, [], "onConflict ignore")

  // Posts: numeric, the view, the foreign keys.
  const posts = await knex("kx_posts").insert([
    { user_id: 1, title: "Hello", price: "11.00", published_at: new Date("2024-01-02T03:04:05Z") },
    { user_id: 1, editor_id: 2, title: "Draft", price: "2.50" },
    { user_id: 2, title: "Bob's", price: null },
  ]).returning("id")
  assert.deepEqual(posts, [{ id: "1" }, { id: "2" }, { id: "3" }], "bigIncrements ids (bigint as strings)")
  const r = await knex("kx_posts").select(knex.raw("round(price / 3, 4) AS third")).where("title", "Hello").first()
  assert.equal(r.third, "3.6667", "round(price / 3, 4)")
  await knex("kx_post_tags").insert([{ post_id: 1, tag: "js" }, { post_id: 1, tag: "sql" }, { post_id: 2, tag: "js" }])
  await expectError(knex("kx_post_tags").insert({ post_id: 1, tag: "js" }), "23505", "kx_post_tags_pk2")
  assert.deepEqual(await knex("kx_post_counts").select("*").orderBy("user_id"), [{ user_id: 1, n_posts: "2" }, { user_id: 2, n_posts: "1" }], "view")
  const e = await expectError(knex("kx_posts").insert({ user_id: 1, editor_id: 99, title: "x" }), "23503", "kx_posts_editor_id_foreign")
  assert.equal(e.table, "kx_posts")
  await expectError(knex("kx_posts").insert({ user_id: 98, editor_id: 1, title: "x" }), "23503", "kx_posts_user_id_foreign")

  // JSON: jsonExtract and whereJsonPath (jsonb_path_query).
  assert.deepEqual(await knex("kx_users").select("email").jsonExtract("settings", "$.theme", "theme").orderBy("id"),
    [{ email: "ann@x", theme: "dark" }, { email: "bob@x", theme: "light" }], "jsonExtract")
  assert.deepEqual(await knex("kx_users").jsonExtract("settings", "$.langs[1]", "l2").where("id", 1), [{ l2: "fr" }], "jsonExtract of an array element")
  assert.deepEqual(await knex("kx_users").pluck("email").whereJsonPath("settings", "$.theme", "=", "light"), ["bob@x"], "whereJsonPath")

  // A transaction that rolls back; the serial is not given back.
  await assert.rejects(knex.transaction(async (trx) => {
    const [u] = await trx("kx_users").insert({ email: "eve@x", full_name: "Eve" }).returning("id")
    assert.equal(u.id, 8) // 3, 5, 6 and 7 went to the unique violations, the merge and the ignore
    throw new Error("roll back")
  }), /roll back/)
  assert.equal((await knex("kx_users").where("email", "eve@x").count("* as n"))[0].n, "0", "rolled back")
  const [fay] = await knex("kx_users").insert({ email: "fay@x", full_name: "Fay" }).returning("id")
  assert.equal(fay.id, 9, "next serial after the rollback")
  await expectError(knex("kx_users").insert({ email: "x@x", full_name: "X", role: "boss" }), "22P02") // last: tandem spends a serial value on it

  // Cascades.
  await knex("kx_users").where("id", 2).del()
  assert.deepEqual(await knex("kx_posts").select("title", "editor_id").orderBy("id"), [{ title: "Hello", editor_id: null }, { title: "Draft", editor_id: null }])
  await knex("kx_users").where("id", 1).del()
  assert.equal((await knex("kx_post_tags").count("* as n"))[0].n, "0", "cascaded twice")

  const [, down] = await knex.migrate.rollback(mcfg, true)
  assert.deepEqual(down, ["002_alter", "001_init"], "final rollback")
  await knex.schema.dropTable("kx_migrations")
  await knex.schema.dropTable("kx_migrations_lock")
  console.log("ok")
}

// cleanup leaves nothing behind for the next client after a failure
// (MikroORM's schema diff would see the enum type).
async function cleanup() {
  await knex.raw("DROP VIEW IF EXISTS kx_post_counts")
  for (const t of ["kx_post_tags", "kx_posts", "kx_users", "kx_migrations", "kx_migrations_lock"]) await knex.schema.dropTableIfExists(t)
  await knex.raw("DROP TYPE IF EXISTS kx_role")
}

main().catch(async (e) => {
  console.log("FAIL: " + (e.stack || e))
  process.exitCode = 1
  await cleanup().catch(() => {})
}).finally(() => knex.destroy())
