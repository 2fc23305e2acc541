-- Extensions applications enable in their schemas: uuid-ossp, pgcrypto, plpgsql.
create extension if not exists "uuid-ossp";
create extension if not exists pgcrypto;
create extension if not exists plpgsql;
select length(uuid_generate_v4()::text), uuid_nil(), pg_typeof(uuid_generate_v4());
select encode(digest('abc', 'sha256'), 'hex'), encode(digest('abc'::bytea, 'md5'), 'hex'), encode(hmac('msg', 'key', 'sha1'), 'hex');
select length(gen_random_bytes(16)), pg_typeof(digest('a', 'sha1'));
create table ext_users (id int primary key, pw text);
insert into ext_users values (1, crypt('secret', gen_salt('bf')));
insert into ext_users values (2, crypt('other', gen_salt('bf', 8)));
select id, pw = crypt('secret', pw), pw like '$2a$%', length(pw) from ext_users order by id;
select digest('a', 'sha999');
drop extension if exists pgcrypto;
