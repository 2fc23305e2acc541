package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// OwnerRole owns every replicated object of the hot-standby pair's
// database (schema public), on every node: each tandem user's role is a
// member of it, so a table one user created is the same to all of them on
// the primary and, after a failover, on the new one (the applier creates
// objects as this role too). It is not a superuser and cannot log in.
const OwnerRole = "_tandem_owner"

// ownSQL sets up the owner role's objects, as the bootstrap superuser:
// schema _tandem_sys (owned by postgres; ordinary roles may only call its
// functions) holds own_all(), which gives the owner role every object of
// schemas public and _tandem (tandem's own tables and functions) a member
// may give away, and an event trigger that runs it
// after each DDL, so objects a session or the applier creates are the
// owner role's at once.
const ownSQL = `
GRANT USAGE, CREATE ON SCHEMA public TO _tandem_owner;
CREATE SCHEMA IF NOT EXISTS _tandem;
GRANT USAGE, CREATE ON SCHEMA _tandem TO _tandem_owner;
CREATE SCHEMA IF NOT EXISTS _tandem_sys;
REVOKE CREATE ON SCHEMA _tandem_sys FROM PUBLIC;
GRANT USAGE ON SCHEMA _tandem_sys TO PUBLIC;
CREATE OR REPLACE FUNCTION _tandem_sys.own_all() RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
DECLARE r record;
BEGIN
  IF current_setting('tandem.owning', true) = 'on' OR NOT pg_has_role('_tandem_owner', 'MEMBER') THEN RETURN; END IF;
  PERFORM set_config('tandem.owning', 'on', true);
  FOR r IN SELECT format('ALTER %s %s OWNER TO _tandem_owner',
        CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'c' THEN 'TYPE' ELSE 'TABLE' END,
        CASE c.relkind WHEN 'c' THEN format('%I.%I', n.nspname, c.relname) ELSE c.oid::regclass::text END) AS q
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname IN ('public', '_tandem') AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
        AND c.relowner <> '_tandem_owner'::regrole
        AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
    UNION ALL
    SELECT format('ALTER %s %s OWNER TO _tandem_owner', CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE' ELSE 'FUNCTION' END, p.oid::regprocedure::text)
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname IN ('public', '_tandem') AND p.proowner <> '_tandem_owner'::regrole
    UNION ALL
    SELECT format('ALTER %s %I.%I OWNER TO _tandem_owner', CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, n.nspname, t.typname)
      FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname IN ('public', '_tandem') AND t.typtype IN ('e', 'd', 'r') AND t.typowner <> '_tandem_owner'::regrole
  LOOP
    BEGIN
      EXECUTE r.q;
    EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR wrong_object_type OR object_not_in_prerequisite_state THEN
      NULL; -- another role's object: it stays its own
    END;
  END LOOP;
  PERFORM set_config('tandem.owning', 'off', true);
END $f$;
CREATE OR REPLACE FUNCTION _tandem_sys.own_evt() RETURNS event_trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
BEGIN
  PERFORM _tandem_sys.own_all();
END $f$;
DO $d$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = '_tandem_own') THEN
    CREATE EVENT TRIGGER _tandem_own ON ddl_command_end EXECUTE FUNCTION _tandem_sys.own_evt();
  END IF;
END $d$;
SELECT _tandem_sys.own_all();
`

// UseRoles makes the replicated designs' sessions run as their client's
// role: it creates each role (a login role, superuser only when granted,
// a member of OwnerRole), gives OwnerRole the replicated objects, and
// makes the applier act as OwnerRole, so no code a member can change runs
// as a superuser. Call it before EnableReplication; the managed server's
// roles only (an external server's DSN names the role sessions use).
func (b *Backend) UseRoles(ctx context.Context, roles []Role) error {
	c, err := pgconn.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return fmt.Errorf("postgres: roles: %w", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, `DO $d$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '_tandem_owner') THEN CREATE ROLE _tandem_owner NOLOGIN NOSUPERUSER; END IF;
END $d$`).ReadAll(); err != nil {
		return fmt.Errorf("postgres: create role %s: %w", OwnerRole, err)
	}
	if err := ensureRoles(ctx, c, roles, false); err != nil {
		return err
	}
	for _, r := range roles {
		if r.Name == "postgres" {
			continue
		}
		if _, err := c.Exec(ctx, "GRANT "+OwnerRole+" TO "+quoteIdent(r.Name)).ReadAll(); err != nil {
			return fmt.Errorf("postgres: grant %s to %s: %w", OwnerRole, r.Name, err)
		}
	}
	b.sessionRoles = true
	return nil
}

// ownAll gives OwnerRole what a restore or a start left to postgres.
func (b *Backend) ownAll(ctx context.Context, c *pgconn.PgConn) error {
	if !b.sessionRoles {
		return nil
	}
	if _, err := c.Exec(ctx, ownSQL).ReadAll(); err != nil {
		return fmt.Errorf("postgres: give the replicated objects to %s: %w", OwnerRole, err)
	}
	return nil
}
