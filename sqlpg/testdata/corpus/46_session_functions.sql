-- Functions of the session's own (CREATE FUNCTION pg_temp.f(OUT ...) LANGUAGE plpgsql): Sequelize's findOrCreate creates pg_temp.testfunc, whose body INSERTs ... RETURNING * INTO an OUT parameter of the table's row type and catches unique_violation with GET STACKED DIAGNOSTICS, selects its fields, and drops it (was 0A000); SELECT ... INTO a scalar OUT parameter; (f.out).*, f.out, *; CREATE of one that exists (42723), a call of one that does not (42883), DROP ... IF EXISTS.
create table sf_users (id serial primary key, username text unique not null, karma int default 0);
create or replace function pg_temp.testfunc(out response sf_users, out sequelize_caught_exception text) returns record as $fn$ begin insert into sf_users (id, username, karma) values (default, 'alice', 3) returning * into response; exception when unique_violation then get stacked diagnostics sequelize_caught_exception = pg_exception_detail; end $fn$ language plpgsql;
select (testfunc.response).id, (testfunc.response).username, (testfunc.response).karma, testfunc.sequelize_caught_exception from pg_temp.testfunc();
select (testfunc.response).*, testfunc.sequelize_caught_exception from pg_temp.testfunc();
drop function if exists pg_temp.testfunc();
select * from sf_users order by id;
drop function if exists pg_temp.testfunc();
drop function pg_temp.testfunc();
select * from pg_temp.testfunc();
create function pg_temp.sf_count(out n int8, out note text) returns record as $$ begin select count(*) into n from sf_users; end $$ language plpgsql;
select * from pg_temp.sf_count();
select f.n, note from pg_temp.sf_count() f;
create function pg_temp.sf_count(out n int8) as $$ begin end $$ language plpgsql;
create or replace function pg_temp.sf_count(out n int8, out msg text) as $$ begin end $$ language plpgsql;
create or replace function pg_temp.sf_count(out n int8, out note text) as $$ begin insert into sf_users (username) values ('alice'); exception when unique_violation then get stacked diagnostics note = message_text, n = returned_sqlstate; end $$ language plpgsql;
select n, note from pg_temp.sf_count();
drop function pg_temp.sf_count();
drop table sf_users;
