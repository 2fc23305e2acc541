-- Aggregates: GROUP BY, HAVING, FILTER, DISTINCT aggregates, empty input.
CREATE TABLE ag_sale (id int PRIMARY KEY, region text, product text, qty int, price numeric(8,2), ok boolean);
INSERT INTO ag_sale VALUES
 (1, 'north', 'a', 3, 2.50, true),
 (2, 'north', 'b', 1, 10.00, true),
 (3, 'south', 'a', 7, 2.50, false),
 (4, 'south', 'c', NULL, 4.00, true),
 (5, 'east', 'a', 2, NULL, NULL),
 (6, 'north', 'a', 5, 2.00, true);
SELECT count(*) FROM ag_sale;
SELECT count(qty) FROM ag_sale;
SELECT count(DISTINCT product) FROM ag_sale;
SELECT sum(qty) FROM ag_sale;
SELECT sum(price) FROM ag_sale;
SELECT min(qty), max(qty) FROM ag_sale;
SELECT min(price), max(price) FROM ag_sale;
SELECT min(product), max(product) FROM ag_sale;
SELECT avg(qty) FROM ag_sale;
SELECT avg(price) FROM ag_sale;
SELECT region, count(*) FROM ag_sale GROUP BY region;
SELECT region, count(*) FROM ag_sale GROUP BY region ORDER BY region;
SELECT region, sum(qty) AS total FROM ag_sale GROUP BY region ORDER BY total DESC;
SELECT region, sum(qty) FROM ag_sale GROUP BY region HAVING sum(qty) > 5;
SELECT region, count(*) FROM ag_sale GROUP BY region HAVING count(*) = 1;
SELECT region, product, sum(qty) FROM ag_sale GROUP BY region, product ORDER BY region, product;
SELECT product, sum(qty * price) FROM ag_sale GROUP BY product ORDER BY product;
SELECT count(*) FILTER (WHERE ok) AS good, count(*) FILTER (WHERE NOT ok) AS bad FROM ag_sale;
SELECT region, sum(qty) FILTER (WHERE product = 'a') FROM ag_sale GROUP BY region ORDER BY region;
SELECT bool_and(ok), bool_or(ok) FROM ag_sale;
SELECT every(qty > 0) FROM ag_sale;
SELECT string_agg(product, ',') FROM (SELECT product FROM ag_sale ORDER BY id) s;
SELECT string_agg(product, ',' ORDER BY id) FROM ag_sale;
SELECT region, string_agg(DISTINCT product, '|' ORDER BY product) FROM ag_sale GROUP BY region ORDER BY region;
SELECT string_agg(DISTINCT region, ', ' ORDER BY region DESC) FROM ag_sale;
SELECT string_agg(DISTINCT product, '') FILTER (WHERE qty > 1) FROM ag_sale WHERE false;
SELECT array_agg(id ORDER BY id) FROM ag_sale WHERE region = 'north';
SELECT count(*) FROM ag_sale WHERE false;
SELECT sum(qty) FROM ag_sale WHERE false;
SELECT max(qty) FROM ag_sale WHERE false;
SELECT region, count(*) FROM ag_sale WHERE false GROUP BY region;
SELECT count(*), sum(qty) FROM ag_sale WHERE region = 'east';
SELECT sum(DISTINCT price) FROM ag_sale;
SELECT avg(DISTINCT qty) FROM ag_sale;
SELECT count(1) FROM ag_sale;
SELECT region FROM ag_sale GROUP BY region HAVING max(price) > 3 ORDER BY region;
SELECT length(region) AS l, count(*) FROM ag_sale GROUP BY length(region) ORDER BY l;
SELECT region, count(*) FROM ag_sale GROUP BY 1 ORDER BY 2 DESC, 1;
SELECT sum(qty)::float8 / count(*) FROM ag_sale;
SELECT stddev(qty) IS NOT NULL FROM ag_sale;
SELECT sum(qty) + 1 FROM ag_sale;
SELECT region, min(id), max(id) FROM ag_sale GROUP BY region ORDER BY min(id);
SELECT count(*) AS n FROM (SELECT DISTINCT region FROM ag_sale) d;
SELECT region, product, count(*) FROM ag_sale GROUP BY ROLLUP (region, product) ORDER BY region, product;
SELECT region, count(*) FROM ag_sale GROUP BY GROUPING SETS ((region), ()) ORDER BY region;
SELECT region, product, sum(qty), grouping(region, product) FROM ag_sale GROUP BY CUBE (region, product) ORDER BY 4, 1, 2;
SELECT region, ok, count(*) FROM ag_sale GROUP BY region, ROLLUP (ok) HAVING count(*) > 1 ORDER BY region, ok;
SELECT json_agg(id ORDER BY id) FROM ag_sale WHERE ok;
SELECT region, json_agg(product ORDER BY id), jsonb_agg(ok ORDER BY id) FROM ag_sale GROUP BY region ORDER BY region;
SELECT json_agg(id) FROM ag_sale WHERE id < 0;
SELECT sum(id) FROM ag_sale;
SELECT avg(id) FROM ag_sale;
SELECT avg(ratio) FROM (VALUES (1.0::float8), (2.0::float8)) v(ratio);
SELECT sum(x) FROM (VALUES (1::int8), (2::int8)) v(x);
SELECT max(ok) FROM ag_sale;
DROP TABLE ag_sale;
create table agg_pct (id int primary key, g text, v int, s text);
insert into agg_pct values (1, 'a', 5, 'x'), (2, 'a', null, 'y'), (3, 'a', 7, 'y'), (4, 'b', 1, 'z'), (5, 'b', 2, 'z'), (6, 'b', 10, 'x'), (7, 'b', 4, null);
select g, percentile_cont(0.5) within group (order by v), percentile_disc(0.5) within group (order by v), mode() within group (order by s) from agg_pct group by g order by g;
select percentile_cont(0.25) within group (order by v desc), percentile_disc(0.9) within group (order by v), percentile_cont(0) within group (order by v), percentile_disc(1) within group (order by s) from agg_pct;
select percentile_cont(0.5) within group (order by v) from agg_pct where false;
select percentile_cont(1.5) within group (order by v) from agg_pct;
