-- Filters, ordering, LIMIT/OFFSET, DISTINCT, CASE, BETWEEN, IN, LIKE, ILIKE.
CREATE TABLE se_emp (id int PRIMARY KEY, name text, dept text, salary int, manager int, hired date);
INSERT INTO se_emp VALUES
 (1, 'Alice', 'eng', 120, NULL, '2015-03-01'),
 (2, 'Bob', 'eng', 100, 1, '2016-07-15'),
 (3, 'Carol', 'sales', 90, 1, '2017-01-10'),
 (4, 'Dave', 'sales', 85, 3, '2018-11-30'),
 (5, 'Eve', 'ops', 70, 1, '2019-05-05'),
 (6, 'Frank', 'eng', 100, 2, '2020-02-29'),
 (7, 'grace', NULL, NULL, 2, NULL);
SELECT name FROM se_emp WHERE dept = 'eng';
SELECT name FROM se_emp WHERE dept = 'eng' ORDER BY name;
SELECT name FROM se_emp ORDER BY salary DESC, name;
SELECT name, salary FROM se_emp ORDER BY salary NULLS FIRST, id;
SELECT name, salary FROM se_emp ORDER BY salary DESC NULLS LAST, id;
SELECT name, salary FROM se_emp ORDER BY salary ASC, id;
SELECT name, salary FROM se_emp ORDER BY salary DESC, id;
SELECT name FROM se_emp ORDER BY id LIMIT 3;
SELECT name FROM se_emp ORDER BY id LIMIT 2 OFFSET 2;
SELECT name FROM se_emp ORDER BY id OFFSET 5;
SELECT name FROM se_emp ORDER BY id FETCH FIRST 2 ROWS ONLY;
SELECT DISTINCT dept FROM se_emp;
SELECT DISTINCT dept FROM se_emp ORDER BY dept;
SELECT DISTINCT ON (dept) dept, name FROM se_emp ORDER BY dept, salary DESC;
SELECT DISTINCT ON (1) dept AS d, name FROM se_emp ORDER BY 1 DESC, name LIMIT 2;
SELECT DISTINCT ON (dept, salary > 50) dept, salary > 50 AS rich, count(*) OVER () FROM se_emp ORDER BY dept, salary > 50, name;
SELECT name FROM se_emp WHERE salary BETWEEN 85 AND 100;
SELECT name FROM se_emp WHERE salary NOT BETWEEN 85 AND 100;
SELECT name FROM se_emp WHERE id IN (1, 3, 5);
SELECT name FROM se_emp WHERE id NOT IN (1, 3, 5);
SELECT name FROM se_emp WHERE name LIKE 'A%';
SELECT name FROM se_emp WHERE name LIKE '_o%';
SELECT name FROM se_emp WHERE name NOT LIKE '%e%';
SELECT name FROM se_emp WHERE name ILIKE 'g%';
SELECT name FROM se_emp WHERE name LIKE 'g%';
SELECT name FROM se_emp WHERE name ~~ 'B%';
SELECT name FROM se_emp WHERE name ~~* 'b%';
SELECT name, CASE WHEN salary >= 100 THEN 'high' WHEN salary >= 80 THEN 'mid' ELSE 'low' END AS band FROM se_emp ORDER BY id;
SELECT name, CASE dept WHEN 'eng' THEN 1 WHEN 'sales' THEN 2 END FROM se_emp ORDER BY id;
SELECT id, name FROM se_emp WHERE dept = 'eng' AND salary > 100 OR dept = 'ops';
SELECT id FROM se_emp WHERE NOT (dept = 'eng');
SELECT id * 2 AS double_id, salary / 10 AS tenth FROM se_emp ORDER BY id;
SELECT name AS "Employee Name" FROM se_emp WHERE id = 1;
SELECT e.name FROM se_emp e WHERE e.id = 2;
SELECT se_emp.name FROM se_emp WHERE se_emp.id = 3;
SELECT * FROM se_emp WHERE hired > '2018-01-01' ORDER BY hired;
SELECT name FROM se_emp WHERE hired IS NULL;
SELECT count(*) FROM se_emp WHERE manager IS NOT NULL;
SELECT 1 AS one, 'two' AS two, 3.0 AS three;
SELECT 1;
SELECT 'hello';
SELECT 1 + 1, 2 * 3;
SELECT name FROM se_emp WHERE salary > 1000;
SELECT name FROM se_emp ORDER BY 1 LIMIT 2;
SELECT dept, name FROM se_emp ORDER BY dept NULLS FIRST, name;
SELECT name FROM se_emp WHERE id = ANY (ARRAY[2, 4]);
SELECT name, salary FROM se_emp WHERE salary IN (SELECT salary FROM se_emp WHERE dept = 'sales') ORDER BY id;
SELECT lower(name) FROM se_emp ORDER BY lower(name) DESC LIMIT 3;
SELECT name FROM se_emp WHERE dept IS DISTINCT FROM 'eng';
SELECT name FROM se_emp WHERE dept IS NOT DISTINCT FROM NULL;
SELECT name FROM se_emp LIMIT 0;
SELECT name FROM se_emp ORDER BY id LIMIT ALL;
SELECT 0 AS set, 1 AS plan, 2 AS key, 3 AS action, 4 AS query;
SELECT s.set + 1 AS abort FROM (SELECT id AS set FROM se_emp) s ORDER BY s.set LIMIT 2;
DROP TABLE se_emp;
