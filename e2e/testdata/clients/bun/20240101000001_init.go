package main

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if _, err := db.NewCreateTable().Model((*User)(nil)).Exec(ctx); err != nil {
			return err
		}
		_, err := db.NewCreateTable().Model((*Story)(nil)).ForeignKey(`(author_id) REFERENCES bun_users (id) ON DELETE CASCADE`).Exec(ctx)
		return err
	}, func(ctx context.Context, db *bun.DB) error {
		if _, err := db.NewDropTable().Model((*Story)(nil)).IfExists().Exec(ctx); err != nil {
			return err
		}
		_, err := db.NewDropTable().Model((*User)(nil)).IfExists().Exec(ctx)
		return err
	})
}
