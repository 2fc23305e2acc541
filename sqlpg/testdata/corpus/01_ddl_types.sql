-- PostgreSQL types in DDL, and results typed as PostgreSQL types them.
CREATE TABLE ty_all (
  id serial PRIMARY KEY,
  name varchar(20) NOT NULL,
  code char(3),
  note text,
  small smallint,
  big bigint,
  price numeric(10,2),
  ratio real,
  score double precision,
  flag boolean,
  born date,
  at timestamp,
  atz timestamptz,
  tm time,
  blob bytea,
  data jsonb,
  doc json,
  uid uuid
);
INSERT INTO ty_all (name, code, note, small, big, price, ratio, score, flag, born, at, atz, tm, blob, data, doc, uid)
VALUES ('alpha', 'abc', 'first row', 1, 10000000000, 12.50, 1.5, 2.25, true, '2024-01-15', '2024-01-15 10:30:00', '2024-01-15 10:30:00+00', '10:30:00', '\x0102ff', '{"a": 1, "b": [1, 2]}', '{"x": "y"}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
INSERT INTO ty_all (name, code, small, big, price, flag, born) VALUES ('beta', 'x', -3, -1, 0.5, false, '1999-12-31');
INSERT INTO ty_all (name) VALUES ('gamma');
SELECT id, name FROM ty_all ORDER BY id;
SELECT name, code FROM ty_all ORDER BY id;
SELECT name, small, big FROM ty_all ORDER BY id;
SELECT name, price FROM ty_all ORDER BY id;
SELECT name, ratio, score FROM ty_all ORDER BY id;
SELECT name, flag FROM ty_all ORDER BY id;
SELECT name, born FROM ty_all ORDER BY id;
SELECT name, at FROM ty_all ORDER BY id;
SELECT name, atz FROM ty_all ORDER BY id;
SELECT name, tm FROM ty_all ORDER BY id;
SELECT name, blob FROM ty_all ORDER BY id;
SELECT name, data FROM ty_all ORDER BY id;
SELECT name, doc FROM ty_all ORDER BY id;
SELECT name, uid FROM ty_all ORDER BY id;
SELECT * FROM ty_all WHERE id = 1;
SELECT count(*) FROM ty_all WHERE flag;
SELECT count(*) FROM ty_all WHERE NOT flag;
SELECT name FROM ty_all WHERE flag IS NULL;
SELECT name FROM ty_all WHERE born < '2000-01-01';
SELECT name FROM ty_all WHERE price > 1;
SELECT name, price * 2 FROM ty_all WHERE price IS NOT NULL ORDER BY name;
SELECT name, length(code) FROM ty_all ORDER BY name;
CREATE TABLE ty_int (a int, b integer, c int4, d int2, e int8, f bigserial);
INSERT INTO ty_int (a, b, c, d, e) VALUES (1, 2, 3, 4, 5);
SELECT * FROM ty_int;
CREATE TABLE ty_num (a numeric, b decimal(5,1), c float, d float8, e float4);
INSERT INTO ty_num VALUES (1.25, 3.5, 1.5, 2.5, 0.25);
SELECT * FROM ty_num;
CREATE TABLE IF NOT EXISTS ty_num (z int);
CREATE TABLE ty_def (id int PRIMARY KEY, n int DEFAULT 7, s text DEFAULT 'none', b boolean DEFAULT false, created timestamptz DEFAULT now());
INSERT INTO ty_def (id) VALUES (1);
SELECT id, n, s, b, created IS NOT NULL AS has_created FROM ty_def;
CREATE TABLE ty_chk (id int PRIMARY KEY, qty int CHECK (qty >= 0), label text UNIQUE);
INSERT INTO ty_chk VALUES (1, 5, 'one');
INSERT INTO ty_chk VALUES (2, -1, 'two');
INSERT INTO ty_chk VALUES (3, 1, 'one');
SELECT * FROM ty_chk;
ALTER TABLE ty_chk ADD COLUMN extra text;
SELECT * FROM ty_chk;
ALTER TABLE ty_chk RENAME COLUMN extra TO more;
SELECT id, more FROM ty_chk;
CREATE INDEX ty_chk_qty ON ty_chk (qty);
CREATE UNIQUE INDEX IF NOT EXISTS ty_chk_label2 ON ty_chk (label, qty);
DROP INDEX ty_chk_qty;
CREATE VIEW ty_view AS SELECT id, qty FROM ty_chk WHERE qty > 0;
SELECT * FROM ty_view;
DROP VIEW ty_view;
DROP TABLE ty_all, ty_int;
DROP TABLE ty_num;
DROP TABLE ty_def;
DROP TABLE IF EXISTS ty_chk CASCADE;
DROP TABLE IF EXISTS ty_never;
-- DROP TABLE of a table other tables reference: refused (2BP01) unless CASCADE, which drops their foreign keys.
CREATE TABLE dr_pa (id int PRIMARY KEY, code text UNIQUE);
CREATE TABLE dr_ch (id int PRIMARY KEY, pa_id int REFERENCES dr_pa (id) ON DELETE SET NULL, code text REFERENCES dr_pa (code), n int NOT NULL);
INSERT INTO dr_pa VALUES (1, 'a');
INSERT INTO dr_ch VALUES (1, 1, 'a', 5);
DROP TABLE dr_pa;
DROP TABLE IF EXISTS dr_pa;
SELECT count(*) FROM dr_pa;
DROP TABLE dr_pa CASCADE;
INSERT INTO dr_ch VALUES (2, 99, 'zz', 6);
SELECT id, pa_id, code, n FROM dr_ch ORDER BY id;
SELECT count(*) FROM information_schema.table_constraints WHERE table_name = 'dr_ch' AND constraint_type = 'FOREIGN KEY';
CREATE TABLE dr_pa (id int PRIMARY KEY);
CREATE TABLE dr_ch2 (id int PRIMARY KEY, pa_id int REFERENCES dr_pa (id));
DROP TABLE dr_ch2, dr_pa;
DROP TABLE dr_ch;
-- A foreign key declared without a name is dropped by the name PostgreSQL gives it (as Alembic reads it back).
CREATE TABLE fkn_pa (id int PRIMARY KEY);
CREATE TABLE fkn_ch (id int PRIMARY KEY, pa int REFERENCES fkn_pa (id), n int);
INSERT INTO fkn_pa VALUES (1);
INSERT INTO fkn_ch VALUES (1, 1, 0);
ALTER TABLE fkn_ch DROP CONSTRAINT fkn_ch_pa_fkey;
SELECT count(*) FROM pg_constraint WHERE conrelid = 'fkn_ch'::regclass AND contype = 'f';
INSERT INTO fkn_ch VALUES (2, 99, 0);
ALTER TABLE fkn_ch DROP CONSTRAINT fkn_ch_pa_fkey;
ALTER TABLE fkn_ch DROP CONSTRAINT IF EXISTS fkn_ch_pa_fkey;
SELECT id, pa FROM fkn_ch ORDER BY id;
DROP TABLE fkn_pa;
DROP TABLE fkn_ch;
-- Views that depend on a dropped table or view: 2BP01 without CASCADE; with it they go too.
CREATE TABLE dv_t (id int PRIMARY KEY, x int);
CREATE VIEW dv_v1 AS SELECT id, x FROM dv_t WHERE x > 0;
CREATE VIEW dv_v2 AS SELECT id FROM dv_v1;
INSERT INTO dv_t VALUES (1, 1), (2, 0);
DROP TABLE dv_t;
DROP VIEW dv_v1;
SELECT * FROM dv_v2;
DROP TABLE dv_t CASCADE;
SELECT count(*) FROM pg_views WHERE viewname IN ('dv_v1', 'dv_v2');
-- A view's columns keep their names across a RENAME COLUMN; DROP COLUMN of what a view reads: 2BP01, CASCADE drops the view.
CREATE TABLE vr_t (id int PRIMARY KEY, a int, b int);
CREATE VIEW vr_v AS SELECT id, a FROM vr_t;
INSERT INTO vr_t VALUES (1, 2, 3);
ALTER TABLE vr_t RENAME COLUMN a TO a2;
SELECT id, a FROM vr_v;
ALTER TABLE vr_t DROP COLUMN a2;
ALTER TABLE vr_t DROP COLUMN b;
ALTER TABLE vr_t DROP COLUMN a2 CASCADE;
SELECT count(*) FROM pg_views WHERE viewname = 'vr_v';
SELECT * FROM vr_t;
DROP TABLE vr_t;
-- Enum types: values checked (22P02), casts, ADD VALUE, the catalog, DROP TYPE.
CREATE TYPE en_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE en_t (id int PRIMARY KEY, m en_mood NOT NULL, n en_mood);
INSERT INTO en_t VALUES (1, 'ok', NULL), (2, 'happy', 'sad');
INSERT INTO en_t VALUES (3, 'meh', NULL);
SELECT id, m, n FROM en_t ORDER BY id;
SELECT 'happy'::en_mood;
SELECT 'nope'::en_mood;
SELECT id FROM en_t WHERE m = 'happy';
ALTER TYPE en_mood ADD VALUE 'meh' BEFORE 'ok';
ALTER TYPE en_mood ADD VALUE IF NOT EXISTS 'meh';
INSERT INTO en_t VALUES (3, 'meh', 'meh');
SELECT id, m::text FROM en_t ORDER BY m, id;
SELECT id FROM en_t WHERE m > 'meh' ORDER BY id;
SELECT id FROM en_t WHERE m <= 'ok' ORDER BY m DESC, id;
SELECT e.enumlabel FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid WHERE t.typname = 'en_mood' ORDER BY e.enumsortorder;
SELECT typname, typtype, typcategory FROM pg_type WHERE typname = 'en_mood';
SELECT column_name, data_type, udt_schema, udt_name FROM information_schema.columns WHERE table_name = 'en_t' ORDER BY ordinal_position;
SELECT 'en_mood'::regtype::text, '"public"."en_mood"'::regtype::text;
SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = 'en_t'::regclass AND a.attnum > 0 ORDER BY a.attnum;
DROP TYPE en_mood;
DROP TABLE en_t;
DROP TYPE en_mood;
DROP TYPE IF EXISTS en_mood;
