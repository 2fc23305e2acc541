-- WITH: plain, several, recursive, data-modifying.
CREATE TABLE ct_node (id int PRIMARY KEY, parent int, label text);
INSERT INTO ct_node VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'a1'), (5, 2, 'a2'), (6, 4, 'a1x');
WITH t AS (SELECT id, label FROM ct_node WHERE parent = 1) SELECT * FROM t ORDER BY id;
WITH t AS (SELECT id FROM ct_node), u AS (SELECT id FROM t WHERE id > 3) SELECT count(*) FROM u;
WITH t(x, y) AS (VALUES (1, 'one'), (2, 'two')) SELECT y FROM t WHERE x = 2;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT sum(n) FROM r;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r ORDER BY n;
WITH RECURSIVE sub(id, label, depth) AS (
  SELECT id, label, 0 FROM ct_node WHERE id = 2
  UNION ALL
  SELECT c.id, c.label, s.depth + 1 FROM ct_node c JOIN sub s ON c.parent = s.id
) SELECT label, depth FROM sub ORDER BY depth, label;
WITH RECURSIVE path(id, p) AS (
  SELECT id, label FROM ct_node WHERE parent IS NULL
  UNION ALL
  SELECT c.id, path.p || '/' || c.label FROM ct_node c JOIN path ON c.parent = path.id
) SELECT p FROM path ORDER BY p;
WITH RECURSIVE fib(a, b) AS (SELECT 0::bigint, 1::bigint UNION ALL SELECT b, a + b FROM fib WHERE b < 100) SELECT max(a) FROM fib;
WITH cnt AS (SELECT parent, count(*) AS n FROM ct_node WHERE parent IS NOT NULL GROUP BY parent) SELECT c.label, cnt.n FROM ct_node c JOIN cnt ON cnt.parent = c.id ORDER BY c.id;
WITH t AS (SELECT 1 AS v) SELECT v + 1 FROM t;
WITH t AS MATERIALIZED (SELECT id FROM ct_node) SELECT count(*) FROM t;
WITH t AS NOT MATERIALIZED (SELECT id FROM ct_node) SELECT count(*) FROM t;
WITH t AS (SELECT id FROM ct_node WHERE id < 3) SELECT * FROM ct_node WHERE id IN (SELECT id FROM t) ORDER BY id;
WITH ins AS (INSERT INTO ct_node VALUES (7, 3, 'b1') RETURNING id) SELECT id FROM ins;
WITH del AS (DELETE FROM ct_node WHERE id = 7 RETURNING label) SELECT label FROM del;
WITH upd AS (UPDATE ct_node SET label = upper(label) WHERE parent = 2 RETURNING id) SELECT count(*) FROM upd;
SELECT label FROM ct_node ORDER BY id;
WITH moved(k, l) AS (UPDATE ct_node SET parent = 3 WHERE parent = 4 RETURNING id, label) SELECT m.k, m.l, c.label FROM moved m JOIN ct_node c ON c.id = 3;
WITH gone AS (DELETE FROM ct_node WHERE id > 100 RETURNING id) SELECT count(*) FROM gone;
WITH ins AS (INSERT INTO ct_node VALUES (8, 1, 'c'), (9, 1, 'd') RETURNING id, parent IS NOT NULL AS has_parent) SELECT * FROM ins ORDER BY id;
WITH d AS (DELETE FROM ct_node WHERE id IN (8, 9) RETURNING *) SELECT sum(id), max(label) FROM d;
WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n FROM t) SELECT n FROM t;
WITH x AS (SELECT 1 AS a), y AS (SELECT a + 1 AS b FROM x) SELECT a, b FROM x, y;
WITH RECURSIVE d(n, f) AS (SELECT 1, 1 UNION ALL SELECT n + 1, f * (n + 1) FROM d WHERE n < 6) SELECT n, f FROM d ORDER BY n;
DROP TABLE ct_node;
