-- Double-quoted names that are no column: PostgreSQL answers 42703, where SQLite reads such a name as a string literal (a typo in a quoted name selected the name, UPDATE wrote it, an index or key on it indexed a constant).
create table zq (id int, k text, "Mixed" int);
insert into zq values (1, 'a', 2);
create index zqi on zq ("Nope");
create index zqm on zq ("Mixed");
alter table zq add constraint zu unique ("Nope");
alter table zq add constraint zu unique (k);
alter table zq add primary key ("Nope");
alter table zq add column n int, add constraint zn unique (n);
select "Nope", id from zq;
update zq set k = "Other";
select * from zq where "k" = 'a' and "Mixed" = 2;
select zq."Nope" from zq;
select "id" from zq order by "Nope";
drop table zq;
