-- INSERT ... ON CONFLICT ON CONSTRAINT name (Kysely's oc.constraint(name)): the constraint's columns are the conflict target (was 0A000); a name that is no constraint of the table 42704.
create table oc (id serial primary key, sku text, title text, n int, constraint oc_sku_uq unique (sku));
create table oc2 (a int, b int, v text, primary key (a, b));
insert into oc (sku, title, n) values ('s1', 'A', 1);
insert into oc (sku, title, n) values ('s1', 'B', 2) on conflict on constraint oc_sku_uq do nothing returning id;
insert into oc (sku, title, n) values ('s1', 'C', 3) on conflict on constraint oc_sku_uq do update set title = excluded.title, n = oc.n + excluded.n returning sku, title, n;
insert into oc (id, sku) values (1, 'zz') on conflict on constraint oc_pkey do update set sku = 'pk' returning id, sku;
insert into oc2 values (1, 2, 'x');
insert into oc2 values (1, 2, 'y') on conflict on constraint oc2_pkey do update set v = excluded.v;
select * from oc2;
insert into oc (sku) values ('s9') on conflict on constraint nope do nothing;
select id, sku, title, n from oc order by id;
drop table oc, oc2;
