-- Set-returning functions SQLite has no plan for, as MikroORM's and Atlas's (ent) index queries use them: generate_subscripts in FROM (0-based for an int2vector such as pg_index.indkey), generate_series over a column in FROM (implicit LATERAL) and in a select list, several set-returning functions in one select list run in lockstep, a set-returning function's column read inside a catalog function's argument in a nested select, a bare column name that SQLite's json_each also has (id).
create table sr (id int primary key, n int, a int[]);
insert into sr values (1, 2, '{5,6}'), (2, 3, '{7}');
select k from generate_subscripts(array['a','b'], 1) as k order by k;
select s.id, g from sr s, generate_series(1, s.n) g order by 1, 2;
select s.id, k from sr s, generate_subscripts(s.a, 1) k order by 1, 2;
select id, array(select k from generate_subscripts(s.a, 1) as k order by k) from sr s order by id;
select generate_series(1,2) as a, unnest(array[5,6]) as b;
select * from (select id, generate_series(1, array_length(a, 1)) as ord, unnest(a) as v from sr) x order by 1, 2;
create index sr_n on sr (n, id);
select array(select pg_get_indexdef(i.indexrelid, k + 1, true) from generate_subscripts(i.indkey, 1) as k order by k) from pg_index i where i.indexrelid = 'sr_n'::regclass;
select t.id, x from sr t, generate_series(t.n, 1, -1) as g(x) order by 1, 2;
select id, unnest(a) from sr order by 1, 2;
select ord, key from (select *, generate_series(1, array_length(i.indkey, 1)) as ord, unnest(i.indkey) as key from pg_index i where i.indexrelid = 'sr_n'::regclass) idx order by ord;
drop table sr;
