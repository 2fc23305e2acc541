// Kysely (0.28, PostgresDialect on node-postgres) against tandem: the
// Migrator (latest, down to nothing, latest) creating an enum type,
// tables with serial and identity keys, a stored generated column, check,
// unique and foreign-key constraints and a partial index, then altering
// them (a column added unique, a type changed, a column renamed);
// db.introspection.getTables() (column types, defaults, auto-increment,
// the generated column); inserts returning, onConflict on a named
// constraint and on a column, a check violation's constraint and table,
// a transaction rolled back, a join with an aggregate. Tables ky_*. Usage:
// node kysely.js DSN. Prints "ok", or "FAIL: ..." and exits non-zero.
const assert = require("assert/strict")
const { Kysely, PostgresDialect, Migrator, NO_MIGRATIONS, sql } = require("kysely")
const { Pool } = require("pg")

const db = new Kysely({ dialect: new PostgresDialect({ pool: new Pool({ connectionString: process.argv[2], max: 2 }) }) })

const migrations = {
  "2024_01_01_init": {
    async up(db) {
      await db.schema.createType("ky_status").asEnum(["pending", "paid", "shipped"]).execute()
      await db.schema.createTable("ky_customer")
        .addColumn("id", "serial", (c) => c.primaryKey())
        .addColumn("email", "varchar(255)", (c) => c.notNull().unique())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("profile", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
        .execute()
      await db.schema.createTable("ky_product")
        .addColumn("id", "bigint", (c) => c.primaryKey().generatedByDefaultAsIdentity())
        .addColumn("sku", "text", (c) => c.notNull())
        .addColumn("price", "numeric(10, 2)", (c) => c.notNull().check(sql`price >= 0`))
        .addColumn("qty", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("value", "numeric(12, 2)", (c) => c.generatedAlwaysAs(sql`price * qty`).stored())
        .addColumn("deleted_at", "timestamptz")
        .addUniqueConstraint("ky_product_sku_uq", ["sku"])
        .execute()
      await db.schema.createTable("ky_order")
        .addColumn("id", "bigserial", (c) => c.primaryKey())
        .addColumn("customer_id", "integer", (c) => c.notNull().references("ky_customer.id").onDelete("cascade"))
        .addColumn("product_id", "bigint", (c) => c.notNull().references("ky_product.id"))
        .addColumn("status", sql`ky_status`, (c) => c.notNull().defaultTo("pending"))
        .execute()
      await db.schema.createIndex("ky_product_live_sku_idx").on("ky_product").column("sku").where("deleted_at", "is", null).execute()
    },
    async down(db) {
      await db.schema.dropTable("ky_order").execute()
      await db.schema.dropTable("ky_product").execute()
      await db.schema.dropTable("ky_customer").execute()
      await db.schema.dropType("ky_status").execute()
    },
  },
  "2024_02_01_alter": {
    async up(db) {
      await db.schema.alterTable("ky_customer").addColumn("handle", "varchar(30)", (c) => c.unique()).execute()
      await db.schema.alterTable("ky_customer").renameColumn("name", "full_name").execute()
      await db.schema.alterTable("ky_customer").alterColumn("email", (c) => c.setDataType("text")).execute()
    },
    async down(db) {
      await db.schema.alterTable("ky_customer").alterColumn("email", (c) => c.setDataType("varchar(255)")).execute()
      await db.schema.alterTable("ky_customer").renameColumn("full_name", "name").execute()
      await db.schema.alterTable("ky_customer").dropColumn("handle").execute()
    },
  },
}

const migrator = new Migrator({
  db,
  provider: { async getMigrations() { return migrations } },
  migrationTableName: "ky_migration",
  migrationLockTableName: "ky_migration_lock",
})

function migrated(r, want) {
  if (r.error) throw r.error
  assert.deepEqual(r.results.map((x) => `${x.migrationName}:${x.direction}:${x.status}`), want)
}

async function expectError(p, code) {
  try {
    await p
  } catch (e) {
    assert.equal(e.code, code, e.message)
    return e
  }
  throw new Error(`no error, want ${code}`)
}

const kyTables = async () => (await db.introspection.getTables()).filter((t) => t.name.startsWith("ky_") && !t.name.startsWith("ky_migration"))

async function main() {
  await cleanup()

  migrated(await migrator.migrateToLatest(), ["2024_01_01_init:Up:Success", "2024_02_01_alter:Up:Success"])
  migrated(await migrator.migrateTo(NO_MIGRATIONS), ["2024_02_01_alter:Down:Success", "2024_01_01_init:Down:Success"])
  assert.deepEqual(await kyTables(), [], "tables after migrating down")
  migrated(await migrator.migrateToLatest(), ["2024_01_01_init:Up:Success", "2024_02_01_alter:Up:Success"])
  migrated(await migrator.migrateDown(), ["2024_02_01_alter:Down:Success"])
  migrated(await migrator.migrateUp(), ["2024_02_01_alter:Up:Success"])

  const tables = await kyTables()
  assert.deepEqual(tables.map((t) => t.name), ["ky_customer", "ky_order", "ky_product"])
  const cols = (name) => tables.find((t) => t.name === name).columns.map((c) => `${c.name}:${c.dataType}:${c.isNullable ? "null" : "notnull"}:${c.hasDefaultValue ? "default" : "-"}:${c.isAutoIncrementing ? "auto" : "-"}`)
  assert.deepEqual(cols("ky_product"), [
    "id:int8:notnull:-:auto", "sku:text:notnull:-:-", "price:numeric:notnull:-:-", "qty:int4:notnull:default:-",
    "value:numeric:null:default:-", "deleted_at:timestamptz:null:-:-",
  ], "ky_product's columns")
  assert.deepEqual(cols("ky_customer"), [
    "id:int4:notnull:default:auto", "email:text:notnull:-:-", "full_name:text:notnull:-:-", "profile:jsonb:notnull:default:-", "handle:varchar:null:-:-",
  ], "ky_customer's columns")
  const status = tables.find((t) => t.name === "ky_order").columns.find((c) => c.name === "status")
  assert.deepEqual([status.dataType, status.dataTypeSchema], ["ky_status", "public"])
  const internal = (await db.introspection.getTables({ withInternalKyselyTables: true })).map((t) => t.name).filter((n) => n.startsWith("ky_"))
  assert.deepEqual(internal, ["ky_customer", "ky_migration", "ky_migration_lock", "ky_order", "ky_product"])

  // Inserts, the generated column, the constraints.
  const cs = await db.insertInto("ky_customer").values([
    { email: "ann@x", full_name: "Ann", handle: "ann" },
    { email: "bob@x", full_name: "Bob", profile: JSON.stringify({ vip: true }) },
  ]).returning(["id", "profile", "handle"]).execute()
  assert.deepEqual(cs, [{ id: 1, profile: {}, handle: "ann" }, { id: 2, profile: { vip: true }, handle: null }])
  const e1 = await expectError(db.insertInto("ky_customer").values({ email: "cy@x", full_name: "Cy", handle: "ann" }).execute(), "23505")
  assert.equal(e1.constraint, "ky_customer_handle_key")
  const ps = await db.insertInto("ky_product").values([{ sku: "A", price: "2.50", qty: 4 }, { sku: "B", price: "10", qty: 1 }])
    .returning(["id", "value"]).execute()
  assert.deepEqual(ps.map((p) => p.id), ["1", "2"])
  const e2 = await expectError(db.insertInto("ky_product").values({ sku: "N", price: -1 }).execute(), "23514")
  assert.deepEqual([e2.constraint, e2.table, e2.schema], ["ky_product_price_check", "ky_product", "public"])
  await expectError(db.insertInto("ky_product").values({ sku: "G", price: 1, value: 3 }).execute(), "428C9")

  // onConflict on the named constraint, and on a column.
  const none = await db.insertInto("ky_product").values({ sku: "A", price: 99 })
    .onConflict((oc) => oc.constraint("ky_product_sku_uq").doNothing()).returning("id").execute()
  assert.deepEqual(none, [], "onConflict constraint doNothing")
  const upd = await db.insertInto("ky_product").values({ sku: "A", price: 3, qty: 5 })
    .onConflict((oc) => oc.constraint("ky_product_sku_uq").doUpdateSet((eb) => ({ price: eb.ref("excluded.price"), qty: sql`ky_product.qty + excluded.qty` })))
    .returning(["id", "price", "qty", "value"]).execute()
  assert.deepEqual(upd.map(({ id, price, qty }) => ({ id, price, qty })), [{ id: "1", price: "3.00", qty: 9 }], "onConflict constraint doUpdateSet")
  const byCol = await db.insertInto("ky_customer").values({ email: "bob@x", full_name: "Robert" })
    .onConflict((oc) => oc.column("email").doUpdateSet({ full_name: "Robert" })).returning(["id", "full_name"]).execute()
  assert.deepEqual(byCol, [{ id: 2, full_name: "Robert" }], "onConflict column")

  // A transaction rolled back.
  await assert.rejects(db.transaction().execute(async (trx) => {
    await trx.insertInto("ky_order").values({ customer_id: 1, product_id: "1" }).execute()
    await trx.insertInto("ky_order").values({ customer_id: 1, product_id: "7" }).execute()
  }), (e) => e.code === "23503" && e.constraint === "ky_order_product_id_fkey")
  assert.equal((await db.selectFrom("ky_order").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n, "0")

  await db.insertInto("ky_order").values([
    { customer_id: 1, product_id: "1", status: "paid" }, { customer_id: 1, product_id: "2" }, { customer_id: 2, product_id: "2" },
  ]).execute()
  await expectError(db.insertInto("ky_order").values({ customer_id: 1, product_id: "1", status: "lost" }).execute(), "22P02")
  const totals = await db.selectFrom("ky_order as o").innerJoin("ky_product as p", "p.id", "o.product_id")
    .select(["o.customer_id", (eb) => eb.fn.sum("p.price").as("total"), (eb) => eb.fn.count("o.id").filterWhere("o.status", "=", "paid").as("paid")])
    .groupBy("o.customer_id").orderBy("o.customer_id").execute()
  assert.deepEqual(totals, [{ customer_id: 1, total: "13.00", paid: "1" }, { customer_id: 2, total: "10.00", paid: "0" }])
  await db.deleteFrom("ky_customer").where("id", "=", 1).execute()
  assert.equal((await db.selectFrom("ky_order").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n, "1", "cascade")

  // The generated numeric(12, 2) column: price * qty as inserted, updated
  // and read back (an unconstrained numeric would show tandem's known
  // difference: the scale of the value stored is not kept, docs/sql.md).
  assert.deepEqual([ps[0].value, upd[0].value], ["10.00", "27.00"], "generated column returned")
  assert.deepEqual(await db.selectFrom("ky_product").select(["id", "value"]).orderBy("id").execute(), [{ id: "1", value: "27.00" }, { id: "2", value: "10.00" }], "generated column")

  migrated(await migrator.migrateTo(NO_MIGRATIONS), ["2024_02_01_alter:Down:Success", "2024_01_01_init:Down:Success"])
  await db.schema.dropTable("ky_migration").execute()
  await db.schema.dropTable("ky_migration_lock").execute()
  console.log("ok")
}

// cleanup leaves nothing behind for the next client after a failure
// (MikroORM's schema diff would see the enum type).
async function cleanup() {
  for (const t of ["ky_order", "ky_product", "ky_customer", "ky_migration", "ky_migration_lock"]) await db.schema.dropTable(t).ifExists().execute()
  await db.schema.dropType("ky_status").ifExists().execute()
}

main().catch(async (e) => {
  console.log("FAIL: " + (e.stack || e))
  process.exitCode = 1
  await cleanup().catch(() => {})
}).finally(() => db.destroy())
