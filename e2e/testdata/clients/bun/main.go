// bun (github.com/uptrace/bun with pgdialect and pgdriver) against tandem:
// bun's migrate package (Init, Migrate, Rollback, Migrate again) creating
// tables with a foreign key, a unique column, arrays and jsonb, an added
// column and indexes (one of them a unique expression index); a bulk
// insert with RETURNING, has-many and belongs-to relations, arrays
// searched with ANY, an upsert (ON CONFLICT DO UPDATE ... RETURNING and DO
// NOTHING), a unique violation (INSERT ... VALUES (DEFAULT, ...)) naming
// the column's plain unique constraint although an expression index also
// exists, RunInTx rolled back, a cascading delete and rolling everything
// back. Usage: bun DSN. Prints "ok", or "FAIL: ..." and exits non-zero.
// Its own module, so the project's go.mod does not carry bun.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/migrate"
)

type User struct {
	bun.BaseModel `bun:"table:bun_users,alias:u"`
	ID            int64          `bun:"id,pk,autoincrement"`
	Name          string         `bun:"name,type:varchar(64),notnull,unique"`
	Emails        []string       `bun:"emails,array"`
	Scores        []int64        `bun:"scores,array"`
	Meta          map[string]any `bun:"meta,type:jsonb"`
	Active        bool           `bun:"active,notnull,default:true"`
	Balance       float64        `bun:"balance,notnull,default:0"`
	CreatedAt     time.Time      `bun:"created_at,notnull,default:current_timestamp"`
	Stories       []*Story       `bun:"rel:has-many,join:id=author_id"`
}

type Story struct {
	bun.BaseModel `bun:"table:bun_stories,alias:s"`
	ID            int64     `bun:"id,pk,autoincrement"`
	Title         string    `bun:"title,notnull"`
	AuthorID      int64     `bun:"author_id,notnull"`
	Author        *User     `bun:"rel:belongs-to,join:author_id=id"`
	Tags          []string  `bun:"tags,array"`
	Published     time.Time `bun:"published,nullzero"`
}

type Label struct {
	bun.BaseModel `bun:"table:bun_labels"`
	ID            int64 `bun:"id,pk,autoincrement"`
	Name          string
}

func fail(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func must(what string, err error) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func want(what string, got, exp any) {
	if !reflect.DeepEqual(got, exp) {
		fail("%s: got %#v, want %#v", what, got, exp)
	}
}

// migrations: registered by 20240101000001_init.go and 20240101000002_labels.go
// (bun names a migration after its file).
var migrations = migrate.NewMigrations()

func tables(ctx context.Context, db *bun.DB) []string {
	tabs := []string{}
	err := db.NewSelect().Column("table_name").Table("information_schema.tables").
		Where("table_schema = current_schema() AND table_name LIKE 'bun\\_%'").Order("table_name").Scan(ctx, &tabs)
	must("information_schema.tables", err)
	return tabs
}

func main() {
	ctx := context.Background()
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(os.Args[1])))
	db := bun.NewDB(sqldb, pgdialect.New())
	defer db.Close()

	for _, t := range []string{"bun_stories", "bun_users", "bun_labels", "bun_migrations", "bun_migration_locks"} {
		_, err := db.NewDropTable().Table(t).IfExists().Cascade().Exec(ctx)
		must("drop "+t, err)
	}

	// Migrations: up, rollback, up.
	m := migrate.NewMigrator(db, migrations)
	must("migrator init", m.Init(ctx))
	must("lock", m.Lock(ctx))
	g, err := m.Migrate(ctx)
	must("migrate", err)
	want("migrated group", g.String(), "group #1 (20240101000001_init, 20240101000002_labels)")
	must("unlock", m.Unlock(ctx))
	ms, err := m.MigrationsWithStatus(ctx)
	must("status", err)
	want("applied", len(ms.Applied()), 2)
	want("tables after migrate", tables(ctx, db), []string{"bun_labels", "bun_migration_locks", "bun_migrations", "bun_stories", "bun_users"})
	g, err = m.Rollback(ctx)
	must("rollback", err)
	want("rolled back", g.String(), "group #1 (20240101000001_init, 20240101000002_labels)")
	want("tables after rollback", tables(ctx, db), []string{"bun_migration_locks", "bun_migrations"})
	g, err = m.Migrate(ctx)
	must("migrate again", err)
	want("migrated again", g.ID, int64(1))
	var fk string
	err = db.NewRaw(`SELECT conname || ': ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'bun_stories'::regclass AND contype = 'f'`).Scan(ctx, &fk)
	must("foreign key", err)
	want("foreign key", fk, "bun_stories_author_id_fkey: FOREIGN KEY (author_id) REFERENCES bun_users(id) ON DELETE CASCADE")
	var color string
	err = db.NewRaw(`SELECT column_default FROM information_schema.columns WHERE table_name = 'bun_labels' AND column_name = 'color'`).Scan(ctx, &color)
	must("added column", err)
	want("added column's default", color, "'red'::character varying")

	// Bulk insert with RETURNING (ids, defaults), arrays, jsonb.
	users := []*User{
		{Name: "alice", Emails: []string{"a@x", "alice@y"}, Scores: []int64{1, 2, 3}, Meta: map[string]any{"k": 1.0}},
		{Name: "bob", Emails: []string{}, Balance: 2.5},
		{Name: "carol", Emails: []string{"with,comma", `with "quote"`, "with space", "NULL"}, Scores: []int64{-1}, Meta: map[string]any{"arr": []any{1.0, 2.0}}},
	}
	_, err = db.NewInsert().Model(&users).Returning("*").Exec(ctx)
	must("bulk insert", err)
	for i, u := range users {
		if u.ID != int64(i+1) || !u.Active || u.CreatedAt.IsZero() {
			fail("bulk insert returning: %d %s id=%d active=%v created_at=%v", i, u.Name, u.ID, u.Active, u.CreatedAt)
		}
	}
	stories := []Story{}
	for i, u := range users {
		for j := 0; j <= i; j++ {
			st := Story{Title: fmt.Sprintf("story %d-%d", i, j), AuthorID: u.ID, Tags: []string{fmt.Sprint("t", j)}}
			if j == 0 {
				st.Published = time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
			}
			stories = append(stories, st)
		}
	}
	res, err := db.NewInsert().Model(&stories).Exec(ctx)
	must("insert stories", err)
	n, _ := res.RowsAffected()
	want("stories inserted", n, int64(6))
	want("story ids", []int64{stories[0].ID, stories[5].ID}, []int64{1, 6})

	var us []User
	err = db.NewSelect().Model(&us).Relation("Stories", func(q *bun.SelectQuery) *bun.SelectQuery { return q.Order("s.id") }).Order("u.id").Scan(ctx)
	must("has-many", err)
	want("users read back", len(us), 3)
	want("carol's emails", us[2].Emails, users[2].Emails)
	want("alice's scores", us[0].Scores, []int64{1, 2, 3})
	want("bob's empty array", us[1].Emails, []string{})
	want("carol's jsonb", us[2].Meta, map[string]any{"arr": []any{1.0, 2.0}})
	want("carol's stories", len(us[2].Stories), 3)
	want("bob's second story", [2]any{us[1].Stories[1].Title, us[1].Stories[1].Published.IsZero()}, [2]any{"story 1-1", true})
	if !us[1].Stories[0].Published.Equal(time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)) {
		fail("published: %v", us[1].Stories[0].Published)
	}
	var ss []Story
	err = db.NewSelect().Model(&ss).Relation("Author").Where("author.name <> ?", "bob").Order("s.id").Scan(ctx)
	must("belongs-to", err)
	want("stories not by bob", len(ss), 4)
	want("belongs-to author", ss[3].Author.Name, "carol")
	cnt, err := db.NewSelect().Model((*Story)(nil)).Where("? = ANY(tags)", "t0").Count(ctx)
	must("ANY(tags)", err)
	want("stories tagged t0", cnt, int64(3))
	var u1 User
	must("ANY(emails)", db.NewSelect().Model(&u1).Where("? = ANY(emails)", "with,comma").Scan(ctx))
	want("found by email", u1.Name, "carol")
	var agg []struct {
		Name   string
		N      int
		Titles []string `bun:",array"`
	}
	err = db.NewSelect().Model((*User)(nil)).ColumnExpr("u.name, coalesce(array_length(u.emails, 1), 0) AS n, array_agg(s.title ORDER BY s.id) AS titles").
		Join("JOIN bun_stories AS s ON s.author_id = u.id").Group("u.name", "u.emails").Order("u.name").Scan(ctx, &agg)
	must("array_agg", err)
	want("array_agg", fmt.Sprintf("%+v", agg), "[{Name:alice N:2 Titles:[story 0-0]} {Name:bob N:0 Titles:[story 1-0 story 1-1]} {Name:carol N:4 Titles:[story 2-0 story 2-1 story 2-2]}]")

	// Upsert.
	up := []*User{{Name: "alice", Balance: 9, Scores: []int64{7}}, {Name: "dave", Balance: 1}}
	_, err = db.NewInsert().Model(&up).On("CONFLICT (name) DO UPDATE").Set("balance = EXCLUDED.balance").Set("scores = EXCLUDED.scores").Returning("id, name, balance, scores").Exec(ctx)
	must("upsert", err)
	// dave's id is 5: the conflicting row took 4 from the sequence.
	want("upsert returning", fmt.Sprintf("%d %v %v / %d %v", up[0].ID, up[0].Balance, up[0].Scores, up[1].ID, up[1].Balance), "1 9 [7] / 5 1")
	res, err = db.NewInsert().Model(&User{Name: "bob"}).On("CONFLICT DO NOTHING").Exec(ctx)
	must("on conflict do nothing", err)
	n, _ = res.RowsAffected()
	want("do nothing rows", n, int64(0))

	// A unique violation: VALUES (DEFAULT, 'bob', ...) with both the
	// column's unique constraint and a unique index on lower(name).
	_, err = db.NewInsert().Model(&User{Name: "bob"}).Exec(ctx)
	var pe pgdriver.Error
	if !errors.As(err, &pe) {
		fail("duplicate name: want a PostgreSQL error, got %v", err)
	}
	want("duplicate name", [3]string{pe.Field('C'), pe.Field('n'), pe.Field('t')}, [3]string{"23505", "bun_users_name_key", "bun_users"})
	_, err = db.NewInsert().Model(&User{Name: "BOB"}).Exec(ctx)
	if !errors.As(err, &pe) {
		fail("duplicate lower(name): want a PostgreSQL error, got %v", err)
	}
	want("duplicate lower(name)", [2]string{pe.Field('C'), pe.Field('n')}, [2]string{"23505", "bun_users_lower_name"})

	// Updates: an array function, a bulk update from a VALUES list.
	_, err = db.NewUpdate().Model((*User)(nil)).Set("scores = array_append(scores, ?)", 99).Where("name IN (?)", bun.In([]string{"bob", "carol"})).Exec(ctx)
	must("array_append", err)
	var bulk []*User
	must("select all", db.NewSelect().Model(&bulk).Order("id").Scan(ctx))
	want("scores after array_append", [][]int64{bulk[1].Scores, bulk[2].Scores}, [][]int64{{99}, {-1, 99}})
	for _, u := range bulk {
		u.Balance += 100
	}
	_, err = db.NewUpdate().Model(&bulk).Column("balance").Bulk().Exec(ctx)
	must("bulk update", err)
	var bal []float64
	must("balances", db.NewSelect().Model((*User)(nil)).Column("balance").Order("id").Scan(ctx, &bal))
	want("balances", bal, []float64{109, 102.5, 100, 101})

	// RunInTx: an error rolls the insert back.
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(&User{Name: "ghost"}).Exec(ctx); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	want("RunInTx error", fmt.Sprint(err), "roll back")
	cnt, err = db.NewSelect().Model((*User)(nil)).Where("name = 'ghost'").Count(ctx)
	must("count ghosts", err)
	want("rolled-back insert", cnt, int64(0))
	_, err = db.NewDelete().Model((*User)(nil)).Where("name = ?", "carol").Exec(ctx)
	must("delete", err)
	cnt, err = db.NewSelect().Model((*Story)(nil)).Count(ctx)
	must("count stories", err)
	want("stories after the cascading delete", cnt, int64(3))

	g, err = m.Rollback(ctx)
	must("final rollback", err)
	want("final rollback", g.ID, int64(1))
	want("tables left", tables(ctx, db), []string{"bun_migration_locks", "bun_migrations"})
	for _, t := range []string{"bun_migrations", "bun_migration_locks"} {
		_, err := db.NewDropTable().Table(t).Exec(ctx)
		must("drop "+t, err)
	}
	fmt.Println("ok")
}
