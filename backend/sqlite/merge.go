package sqlite

import (
	"context"
	"database/sql/driver"
	"io"

	"github.com/tandemdb/tandem/sqlpg"
)

// runMerge carries out a MERGE's plan (sqlpg.MergePlan) on c: all or
// nothing, as one PostgreSQL statement. It returns the number of rows
// inserted, updated and deleted.
func runMerge(ctx context.Context, c *conn, mp *sqlpg.MergePlan, args []driver.NamedValue) (int64, error) {
	if err := c.exec("SAVEPOINT _tandem_merge"); err != nil {
		return 0, mapError(err)
	}
	n, err := mergeSteps(ctx, c, mp, args)
	if err != nil {
		_ = c.exec("ROLLBACK TO _tandem_merge")
		_ = c.exec("RELEASE _tandem_merge")
		return 0, mapError(err)
	}
	if err := c.exec("RELEASE _tandem_merge"); err != nil {
		return 0, mapError(err)
	}
	return n, nil
}

func mergeSteps(ctx context.Context, c *conn, mp *sqlpg.MergePlan, args []driver.NamedValue) (int64, error) {
	for _, q := range []string{mp.Drop, mp.Create} {
		if _, err := c.c.ExecContext(ctx, q, nil); err != nil {
			return 0, err
		}
	}
	if _, err := c.c.ExecContext(ctx, mp.Fill, args); err != nil {
		return 0, err
	}
	one := func(q string) (driver.Value, bool, error) {
		rows, err := c.c.QueryContext(ctx, q, nil)
		if err != nil {
			return nil, false, err
		}
		defer rows.Close()
		v := make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(v); err != nil {
			if err == io.EOF {
				return nil, false, nil
			}
			return nil, false, err
		}
		return v[0], true, nil
	}
	if mp.Twice != "" {
		if _, found, err := one(mp.Twice); err != nil {
			return 0, err
		} else if found {
			return 0, sqlpg.ErrMergeTwice
		}
	}
	for _, q := range mp.Steps {
		if _, err := c.c.ExecContext(ctx, q, nil); err != nil {
			return 0, err
		}
	}
	v, _, err := one(mp.Count)
	if err != nil {
		return 0, err
	}
	if _, err := c.c.ExecContext(ctx, mp.Drop, nil); err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return n, nil
}
