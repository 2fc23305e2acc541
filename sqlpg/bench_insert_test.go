package sqlpg_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/sqlpg"
)

// BenchmarkTranslateMultiRowInsert: the translator's cost per row of a
// multi-row INSERT (1,000 rows of an integer and a short text; distinct
// texts, so nothing comes from the cache).
func BenchmarkTranslateMultiRowInsert(b *testing.B) {
	c := fuzzDB(b)
	stmts, err := translateForFuzz(c, "CREATE TABLE bmi (id int PRIMARY KEY, v text)")
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := c.Exec(s, nil); err != nil {
			b.Fatal(err)
		}
	}
	const rows = 1000
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var sb strings.Builder
		fmt.Fprintf(&sb, "INSERT INTO bmi VALUES ")
		for r := 0; r < rows; r++ {
			if r > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "(%d, 'row %d %d')", r, r, i)
		}
		if _, err := sqlpg.Translate(sb.String(), fuzzSchema{c}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
