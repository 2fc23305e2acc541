-- Whole rows as JSON: row_to_json, json_agg, jsonb_agg, to_json and to_jsonb of a FROM item (each row on a line of its own in json_agg, as PostgreSQL prints records), times in ISO 8601 and the session's zone.
create table rj (id int primary key, at timestamptz, ts timestamp, d date);
insert into rj values (1, '2024-01-05 10:00+00', '2024-01-05 10:00', '2024-01-05');
select row_to_json(r) from rj r;
set timezone = 'Europe/Berlin';
select row_to_json(r) from rj r;
select json_agg(r) from rj r;
select to_json(at), to_jsonb(ts), to_json(d) from rj;
drop table rj;
create table rj2 (id int primary key, name text, ok boolean);
insert into rj2 values (1, 'a', true), (2, 'b"c', null);
select json_agg(x) from rj2 x;
select json_agg(x order by id desc) from rj2 x where id > 0;
select to_json(x), to_jsonb(x) from rj2 x order by id;
select jsonb_agg(x) from rj2 x;
select r.id, json_agg(x) from rj2 r join rj2 x on x.id <= r.id group by r.id order by r.id;
drop table rj2;
reset timezone;
