package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestManagedStartQueryStop(t *testing.T) {
	if _, err := FindBinDir(""); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	m, err := StartManaged(ctx, ManagedConfig{DataDir: t.TempDir() + "/pg", Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	c, err := pgx.Connect(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := c.QueryRow(ctx, "show fsync").Scan(&v); err != nil || v != "off" {
		t.Fatalf("fsync=%q err=%v", v, err)
	}
	c.Close(ctx)
	m.Stop()
	select {
	case <-m.Done():
	default:
		t.Fatal("server still running after Stop")
	}
}
