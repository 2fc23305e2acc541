-- What ActiveRecord's PostgreSQL adapter reads: pg_type's input and output functions as PostgreSQL names them (array_in for every array type, numeric_in ...: were _int4in, numericin, and the adapter could not quote an array default), a table's primary key through generate_subscripts(pg_index.indkey, 1) in a select list (0-based over an int2vector: was 1-based, and the key was not found; NULL past its array's end beside a longer one, was the longer one's subscript); pgjdbc's getIndexInfo reads (information_schema._pg_expandarray(indkey)).n, which counts from 1 over an int2vector too.
select typname, typinput, typoutput, typreceive, typsend from pg_type where typname in ('_int4', 'int4', 'numeric', 'text', '_varchar', 'timestamptz', 'jsonb', 'bool', 'bytea', 'uuid', 'int2vector', 'varchar', 'date', 'float8', '_text', 'name', 'oid', 'bpchar', 'int8', 'interval', 'json') order by 1;
create table ar_pk(id bigserial primary key, v text);
create table ar_pk2(a int, b int, c text, primary key (b, a));
select a.attname from (select indrelid, indkey, generate_subscripts(indkey, 1) idx from pg_index where indrelid = '"ar_pk"'::regclass and indisprimary) i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[i.idx] order by i.idx;
select a.attname from (select indrelid, indkey, generate_subscripts(indkey, 1) idx from pg_index where indrelid = 'ar_pk2'::regclass and indisprimary) i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[i.idx] order by i.idx;
select generate_subscripts('{a,b,c}'::text[], 1) as s;
select generate_subscripts('3 1'::int2vector, 1) as v;
select (information_schema._pg_expandarray(i.indkey)).n as n, (information_schema._pg_expandarray(i.indkey)).x as x from pg_index i where i.indrelid = 'ar_pk2'::regclass order by 1;
drop table ar_pk;
drop table ar_pk2;
select generate_subscripts('{a,b,c}'::text[], 1) as s, generate_subscripts('{x,y}'::text[], 1) as v, generate_subscripts('3 1'::int2vector, 1) as w, unnest('{p}'::text[]) as u;
