// node-postgres against tandem: queries with parameters, types, a
// transaction, a named prepared statement. Usage: node node_pg.js DSN
const { Client } = require('pg');

function fail(msg) {
  console.log('FAIL: ' + msg);
  process.exit(1);
}
function eq(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

(async () => {
  const c = new Client({ connectionString: process.argv[2] });
  await c.connect();
  await c.query('DROP TABLE IF EXISTS js_item');
  await c.query(`CREATE TABLE js_item (id serial PRIMARY KEY, name varchar(40) NOT NULL,
    qty integer, price numeric(8,2), ok boolean, at timestamptz, meta jsonb)`);
  const at = new Date('2024-03-15T13:45:30.123Z');
  const ins = await c.query(
    'INSERT INTO js_item (name, qty, price, ok, at, meta) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id',
    ['apple', 3, '1.25', true, at, { tags: ['x'], n: 1 }]);
  if (ins.rowCount !== 1 || ins.rows[0].id !== 1) fail('insert returning: ' + JSON.stringify(ins.rows));
  await c.query('INSERT INTO js_item (name, qty, price, ok, at, meta) VALUES ($1, $2, $3, $4, $5, $6)',
    ['pear', null, null, false, null, null]);
  const r = await c.query('SELECT id, name, qty, price, ok, at, meta FROM js_item WHERE id = $1', [1]);
  const row = r.rows[0];
  if (!row) fail('select by parameter: no row');
  if (row.name !== 'apple' || row.qty !== 3 || row.price !== '1.25' || row.ok !== true) fail('values: ' + JSON.stringify(row));
  if (!(row.at instanceof Date) || row.at.getTime() !== at.getTime()) fail('timestamptz: ' + row.at);
  if (!eq(row.meta, { n: 1, tags: ['x'] }) && !eq(row.meta, { tags: ['x'], n: 1 })) fail('jsonb: ' + JSON.stringify(row.meta));
  const types = r.fields.map((f) => f.dataTypeID);
  if (!eq(types, [23, 1043, 23, 1700, 16, 1184, 3802])) fail('field types: ' + types);
  const nulls = await c.query('SELECT qty, price, ok, at, meta FROM js_item WHERE name = $1', ['pear']);
  if (!eq(nulls.rows[0], { qty: null, price: null, ok: false, at: null, meta: null })) fail('nulls: ' + JSON.stringify(nulls.rows[0]));
  const like = await c.query('SELECT count(*)::int AS n FROM js_item WHERE name ILIKE $1', ['%P%']);
  if (like.rows[0].n !== 2) fail('ILIKE with parameter: ' + JSON.stringify(like.rows));
  await c.query('BEGIN');
  await c.query('UPDATE js_item SET qty = qty + $1 WHERE id = $2', [10, 1]);
  await c.query('ROLLBACK');
  const named = { name: 'by-id', text: 'SELECT qty FROM js_item WHERE id = $1', values: [1] };
  for (let i = 0; i < 3; i++) {
    const q = await c.query(named);
    if (q.rows[0].qty !== 3) fail('named prepared statement / rollback: ' + JSON.stringify(q.rows));
  }
  try {
    await c.query('INSERT INTO js_item (id, name) VALUES ($1, $2)', [1, 'dup']);
    fail('duplicate key accepted');
  } catch (e) {
    if (e.code !== '23505') fail('duplicate key SQLSTATE ' + e.code + ': ' + e.message);
  }
  await c.query('DROP TABLE js_item');
  await c.end();
  console.log('ok');
})().catch((e) => fail(e.stack || String(e)));
