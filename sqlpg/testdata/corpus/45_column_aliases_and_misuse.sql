-- A table's columns renamed in FROM (t AS x(a, b): SQLite takes no column list; was a syntax error), and misuses the translator's fuzzing found that reached SQLite: window functions without OVER (42809), a LIKE operator without a left operand (42883), DROP TABLE of a view and DROP VIEW of a table (42809), ORDER BY a name that is no column of a UNION (42703), ON CONFLICT ... SET of a field (0A000 here, PostgreSQL 42804).
create table ra(id int primary key, v text, w int);
insert into ra values (1, 'a', 10), (2, 'b', 20);
select * from ra as x(i, t) order by i;
select x.i, x.w from ra x(i) where x.i = 2;
select count(*) from ra as x(a, b, c, d);
select * from ra x(i) join ra y(j) on x.i = y.j order by 1;
select * from ra_nosuch x(a);
select rank();
select row_number();
select ntile(2);
select lag(1);
select ~~ 'a';
create view ra_v as select id from ra;
drop table ra_v;
drop view ra;
select id from ra union select 3 order by nosuch;
drop view ra_v;
drop table ra;
select 1 having count(*) > 0;
select 1 having sum(0) > 0;
select 1 as x from (values (1)) v(a) having sum(a) = 1;
select 'k', 2 from (select 1 where false) e having true;
select 1 having false;
-- a row IN a subquery of another width (found by fuzzing: SQLite's own error had no SQLSTATE)
SELECT 1 WHERE (1, 2) IN (SELECT 1);
SELECT 1 WHERE 1 IN (SELECT 1, 2);
SELECT 1 WHERE (1, 2) NOT IN (SELECT 1);
SELECT 1 WHERE (1, 2) IN (SELECT 1, 2);
SELECT 1 WHERE (1, 2) IN (VALUES (1, 2));
SELECT 1 WHERE (1, 3) IN (SELECT 1, 2 UNION SELECT 1, 3);
-- one WITH name twice (found by fuzzing: SQLite's own error had no SQLSTATE)
WITH y AS (SELECT 0), y AS (SELECT 0) SELECT 1;
SELECT (WITH a AS (SELECT 1), a AS (SELECT 2) SELECT 1);
WITH a AS (SELECT 1 AS x), b AS (SELECT 2 AS y) SELECT * FROM a, b;
-- ALTER TABLE of a view (found by fuzzing: SQLite's "cannot drop column from view" had no SQLSTATE)
CREATE TABLE av_t (a int, b int);
CREATE VIEW av_v AS SELECT a, b FROM av_t;
ALTER TABLE av_v DROP a;
ALTER TABLE av_v ADD c int;
ALTER TABLE av_v ALTER a TYPE text;
ALTER TABLE av_v ALTER a SET NOT NULL;
SELECT * FROM av_v;
DROP VIEW av_v;
DROP TABLE av_t;
-- unnamed columns of a subquery in FROM and of a WITH query: PostgreSQL's names, also when repeated
WITH w AS (SELECT 1) SELECT * FROM w;
WITH w AS (SELECT 1 + 1, lower('A'), count(*) FROM (VALUES (1)) v(x)) SELECT * FROM w;
SELECT * FROM (SELECT 1 + 1, lower('A')) s;
SELECT s.count FROM (SELECT count(*) FROM (VALUES (1), (2)) v(x)) s;
SELECT sum(count) FROM (SELECT x, count(*) FROM (VALUES (1), (1), (2)) v(x) GROUP BY x) s;
SELECT * FROM (SELECT 1, 2) s;
SELECT * FROM (SELECT 1 AS a) x, (SELECT 2 AS a) y;
SELECT * FROM (SELECT 1::text, 'b'::varchar, now() IS NOT NULL) s;
WITH w(a) AS (SELECT 1 + 1) SELECT * FROM w;
SELECT * FROM (SELECT 1 + 1) s(a);
SELECT "?column?" FROM (SELECT 1 + 1) s;
