package sqlpg

import (
	"errors"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// Materialized views. A materialized view is a table holding its rows
// (made by CREATE TABLE ... AS, typed as CREATE TABLE AS types its
// columns) and a row of _tandem_matviews: its query as PostgreSQL's SQL
// (pg_matviews.definition, pg_get_viewdef), the SQLite query that
// REFRESH runs, and whether it is populated. REFRESH empties the table
// and inserts the query's rows in one statement (a script in a
// savepoint), in the caller's transaction: its row changes are captured
// and replicated like any write. A REFRESH that changes whether the view
// is populated (WITH NO DATA, or the first with data) is DDL: a query of
// an unpopulated view fails when it is translated (55000, as PostgreSQL
// when it plans it), so cached translations must be dropped, and the
// flag's row (a metadata table, not captured) travels in the DDL's
// script.

// Matview is a materialized view as the back end keeps it.
type Matview struct {
	Query       string // the SQLite query REFRESH runs
	Populated   bool
	UniqueIndex bool // has a unique index without WHERE (REFRESH CONCURRENTLY)
}

// MatviewLister is a Schema that knows the materialized views.
type MatviewLister interface {
	Matviews() map[string]Matview
}

func (t *translator) matviews() map[string]Matview {
	if ml, ok := t.sch.(MatviewLister); ok {
		return ml.Matviews()
	}
	return nil
}

// matviewAccess refuses what PostgreSQL refuses of a materialized view in
// a query or a write: reading one not populated (55000), changing one
// (42809).
func (t *translator) matviewAccess(raw *pg_query.Node, target *pg_query.RangeVar) error {
	// The (cached) list first: without materialized views, no walk.
	mvs := t.matviews()
	if len(mvs) == 0 {
		return nil
	}
	if target != nil {
		if _, ok := mvs[target.Relname]; ok {
			return &pgwire.Error{Code: "42809", Message: fmt.Sprintf("cannot change materialized view %q", target.Relname)}
		}
	}
	var err error
	walkNode(raw, func(n *pg_query.Node) {
		if r := n.GetRangeVar(); r != nil && err == nil {
			if mv, ok := mvs[r.Relname]; ok && !mv.Populated {
				err = notPopulated(r.Relname)
			}
		}
	})
	return err
}

func notPopulated(name string) error {
	return &pgwire.Error{Code: "55000", Message: fmt.Sprintf("materialized view %q has not been populated", name),
		Hint: "Use the REFRESH MATERIALIZED VIEW command."}
}

// refreshMatview: REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH
// [NO] DATA].
func (t *translator) refreshMatview(s *pg_query.RefreshMatViewStmt, tr *Translation) (*Translation, error) {
	tr.Tag = "REFRESH MATERIALIZED VIEW"
	name, err := t.tableName(s.Relation)
	if err != nil {
		return nil, err
	}
	if s.Concurrent && s.SkipData {
		// When it runs, as PostgreSQL (a 42601 here would be taken
		// for a syntax error, refused at Parse).
		tr.Deferred, tr.Noop = &pgwire.Error{Code: "42601", Message: "CONCURRENTLY and WITH NO DATA options cannot be used together"}, true
		return tr, nil
	}
	mv, ok := t.matviews()[name]
	if !ok {
		if t.sch != nil && t.sch.Columns(name) != nil {
			return nil, &pgwire.Error{Code: "0A000", Message: fmt.Sprintf("%q is not a materialized view", name)}
		}
		return nil, &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", name)}
	}
	if s.Concurrent && !mv.Populated {
		return nil, &pgwire.Error{Code: "0A000", Message: "CONCURRENTLY cannot be used when the materialized view is not populated"}
	}
	if s.Concurrent && !mv.UniqueIndex {
		return nil, &pgwire.Error{Code: "55000", Message: fmt.Sprintf("cannot refresh materialized view \"public.%s\" concurrently", name),
			Hint: "Create a unique index with no WHERE clause on one or more columns of the materialized view."}
	}
	tr.Script = append(tr.Script, "DELETE FROM "+quoteIdent(name))
	if !s.SkipData {
		tr.Script = append(tr.Script, "INSERT INTO "+quoteIdent(name)+" "+mv.Query)
	}
	if mv.Populated == s.SkipData {
		// Populated or not from now on: DDL (see above).
		tr.DDL = true
		populated := 1
		if s.SkipData {
			populated = 0
		}
		tr.Script = append(tr.Script, fmt.Sprintf("UPDATE _tandem_matviews SET populated = %d WHERE name = %s", populated, quoteLit(name)))
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}

// dropMatviews: DROP MATERIALIZED VIEW [IF EXISTS] name [, ...]
// [CASCADE]; the tables are dropped as DROP TABLE drops them, with their
// records.
func (t *translator) dropMatviews(s *pg_query.DropStmt, tr *Translation) (*Translation, error) {
	mvs := t.matviews()
	kept := s.Objects[:0]
	var names []string
	for _, o := range s.Objects {
		n := strs(o.GetList().GetItems())
		if len(n) == 0 {
			continue
		}
		if len(n) > 1 && !strings.EqualFold(n[0], "public") {
			return nil, unsupported("objects outside the public schema")
		}
		name := n[len(n)-1]
		if _, ok := mvs[name]; !ok {
			if t.sch != nil && t.sch.Columns(name) != nil {
				hint := "Use DROP TABLE to remove a table."
				if vl, ok := t.sch.(ViewLister); ok {
					if _, isView := vl.Views()[name]; isView {
						hint = "Use DROP VIEW to remove a view."
					}
				}
				return nil, &pgwire.Error{Code: "42809", Message: fmt.Sprintf("%q is not a materialized view", name), Hint: hint}
			}
			if s.MissingOk {
				continue // PostgreSQL's NOTICE: skipping
			}
			return nil, &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("materialized view %q does not exist", name)}
		}
		kept = append(kept, o)
		names = append(names, name)
	}
	if len(kept) == 0 {
		tr.Noop, tr.Tag = true, "DROP MATERIALIZED VIEW"
		return tr, nil
	}
	s.Objects = kept
	s.RemoveType = pg_query.ObjectType_OBJECT_TABLE
	t.droppingMatviews = true
	out, err := t.drop(s, tr)
	if err != nil {
		var pe *pgwire.Error
		if errors.As(err, &pe) && pe.Code == "2BP01" {
			// Views that read it: named as what it is.
			for _, name := range names {
				pe.Message = strings.Replace(pe.Message, "cannot drop table "+name+" ", "cannot drop materialized view "+name+" ", 1)
				pe.Detail = strings.ReplaceAll(pe.Detail, " depends on table "+name, " depends on materialized view "+name)
			}
		}
		return nil, err
	}
	for _, name := range names {
		out.Script = append(out.Script, "DELETE FROM _tandem_matviews WHERE name = "+quoteLit(name))
	}
	out.Tag = "DROP MATERIALIZED VIEW"
	out.SQL = strings.Join(out.Script, ";\n")
	return out, nil
}

// notMatview refuses DROP TABLE / DROP VIEW of a materialized view, as
// PostgreSQL does.
func (t *translator) notMatview(s *pg_query.DropStmt, what string) error {
	if t.droppingMatviews {
		return nil
	}
	mvs := t.matviews()
	if len(mvs) == 0 {
		return nil
	}
	for _, o := range s.Objects {
		n := strs(o.GetList().GetItems())
		if len(n) == 0 {
			continue
		}
		if _, ok := mvs[n[len(n)-1]]; ok {
			return &pgwire.Error{Code: "42809", Message: fmt.Sprintf("%q is not a %s", n[len(n)-1], what),
				Hint: "Use DROP MATERIALIZED VIEW to remove a materialized view."}
		}
	}
	return nil
}
