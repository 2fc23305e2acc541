module github.com/tandemdb/tandem/e2e/testdata/clients/migrate

go 1.25.11

require (
	github.com/golang-migrate/migrate/v4 v4.20.1
	github.com/lib/pq v1.12.3
)
