CREATE TYPE user_role AS ENUM ('admin', 'member');
ALTER TABLE users ADD COLUMN role user_role NOT NULL DEFAULT 'member';
CREATE INDEX users_role ON users (role);
