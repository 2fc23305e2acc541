package main

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if _, err := db.NewCreateTable().Model((*Label)(nil)).Exec(ctx); err != nil {
			return err
		}
		if _, err := db.NewAddColumn().Model((*Label)(nil)).ColumnExpr("color varchar(20) NOT NULL DEFAULT 'red'").Exec(ctx); err != nil {
			return err
		}
		if _, err := db.NewCreateIndex().Model((*Story)(nil)).Index("bun_stories_title_idx").Column("title", "author_id").Exec(ctx); err != nil {
			return err
		}
		_, err := db.NewCreateIndex().Model((*User)(nil)).Unique().Index("bun_users_lower_name").ColumnExpr("lower(name)").Exec(ctx)
		return err
	}, func(ctx context.Context, db *bun.DB) error {
		if _, err := db.NewDropIndex().Index("bun_users_lower_name").IfExists().Exec(ctx); err != nil {
			return err
		}
		if _, err := db.NewDropIndex().Index("bun_stories_title_idx").IfExists().Exec(ctx); err != nil {
			return err
		}
		_, err := db.NewDropTable().Model((*Label)(nil)).Exec(ctx)
		return err
	})
}
