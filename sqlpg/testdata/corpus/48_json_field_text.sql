-- json ->> key as PostgreSQL's text (SQLite's ->> answered numbers and booleans as SQL numbers: 'true' was 1, and 1 was unequal to '1', so peewee's meta['x'] == '1' found nothing): numbers with their scale, booleans, strings, JSON null as NULL, array elements by index (negative from the end), a text key on an array NULL.
create table jf(id int primary key, j jsonb, t json);
insert into jf values (1, '{"x": 1, "b": true, "f": false, "n": null, "s": "a", "d": 1.50, "a": [1, "two", {"k": 3}]}', '{"x": 1, "b": true}');
select j->>'x', j->>'b', j->>'f', j->>'n', j->>'s', j->>'d', j->>'a', j->'a'->>1, j->'a'->>-1, j->'a'->>'0', j->'a'->2->>'k' from jf;
select count(*) from jf where j->>'x' = '1' and j->>'b' = 'true' and j->>'s' = 'a' and j->>'n' is null;
select t->>'x', t->>'b', (t->>'x')::int + 1 from jf;
select id from jf where (j->>'d')::numeric = 1.5;
select '{"x":1}'::jsonb->>'x' = '1', '[10,20]'::jsonb->>0, '{"a":"b"}'::json->>'a';
drop table jf;
