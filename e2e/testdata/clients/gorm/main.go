// GORM (gorm.io/gorm with its pgx-based PostgreSQL driver) against tandem:
// AutoMigrate (create, then introspect an existing schema and change
// nothing, then add a column), associations with Preload, a LIMIT bound as
// a parameter (First), updates, a transaction rolled back, and an error's
// SQLSTATE. Usage: gorm DSN. Exits non-zero with a message on the first
// difference. Its own module, so the project's go.mod does not carry GORM.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type Author struct {
	ID        uint   `gorm:"primaryKey"`
	Name      string `gorm:"size:100;not null;uniqueIndex"`
	Books     []Book
	CreatedAt time.Time
}

type Book struct {
	ID        uint `gorm:"primaryKey"`
	AuthorID  uint `gorm:"index"`
	Title     string
	Pages     int
	Price     float64
	Tags      string `gorm:"default:'none'"`
	UpdatedAt time.Time
}

// BookV2 is Book with a column more, as a later version of the model.
type BookV2 struct {
	ID   uint `gorm:"primaryKey"`
	ISBN string
}

func (BookV2) TableName() string { return "books" }

func fail(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func must(what string, err error) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func main() {
	db, err := gorm.Open(postgres.Open(os.Args[1]), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	must("open", err)
	// DROP TABLE IF EXISTS ... CASCADE, in its own order.
	must("DropTable", db.Migrator().DropTable(&Book{}, &Author{}))
	must("AutoMigrate", db.AutoMigrate(&Author{}, &Book{}))
	// Again: reads the schema back (information_schema, pg_catalog) and
	// must find nothing to change.
	must("AutoMigrate over the existing tables", db.AutoMigrate(&Author{}, &Book{}))
	a := Author{Name: "Ursula", Books: []Book{{Title: "The Dispossessed", Pages: 387, Price: 9.5}, {Title: "The Lathe of Heaven", Pages: 184}}}
	must("create with associations", db.Create(&a).Error)
	var got Author
	must("First with Preload", db.Preload("Books").First(&got, "name = ?", "Ursula").Error)
	if got.ID != a.ID || len(got.Books) != 2 || got.Books[0].Tags != "none" || got.Books[0].Price != 9.5 {
		fail("read back: %+v", got)
	}
	var page []Book
	must("Limit/Offset", db.Order("pages").Limit(1).Offset(1).Find(&page).Error)
	if len(page) != 1 || page[0].Pages != 387 {
		fail("page 2 of 1: %+v", page)
	}
	must("update", db.Model(&Book{}).Where("pages > ?", 200).Update("price", 11.25).Error)
	rollback := errors.New("roll back")
	if err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&Book{AuthorID: a.ID, Title: "rolled back"}).Error; err != nil {
			return err
		}
		return rollback
	}); !errors.Is(err, rollback) {
		fail("transaction: %v", err)
	}
	var n int64
	must("count", db.Model(&Book{}).Count(&n).Error)
	if n != 2 {
		fail("%d books after the rolled-back transaction, want 2", n)
	}
	err = db.Create(&Author{Name: "Ursula"}).Error
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		fail("a duplicate name: %v, want SQLSTATE 23505", err)
	}
	must("AutoMigrate adding a column", db.AutoMigrate(&BookV2{}))
	if !db.Migrator().HasColumn(&BookV2{}, "isbn") {
		fail("the new column is not there")
	}
	cols, err := db.Migrator().ColumnTypes("books")
	must("ColumnTypes", err)
	if len(cols) != 8 {
		fail("%d columns in books, want 8", len(cols))
	}
	fmt.Println("ok")
}
