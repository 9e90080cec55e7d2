package sqldb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// BenchmarkContainsFolded filters 100,000 names — one in a hundred not
// plain ASCII — through ContainsFolded's SQLite condition, against the
// floor: SQLite's built-in LIKE over lower(), which folds ASCII alone,
// and passage_lower on every row, which is what a condition of one
// function call would cost.
//
//	go test -run '^$' -bench BenchmarkContainsFolded -benchtime 20x ./internal/sqldb
func BenchmarkContainsFolded(b *testing.B) {
	db, _ := sqldbtest.SQLite(b)
	_, err := db.Exec(`CREATE TABLE names (name TEXT NOT NULL)`)
	require.NoError(b, err)
	tx := db.MustBegin()
	for i := range 100_000 {
		name := fmt.Sprintf("sched-%05d", i)
		if i%100 == 0 {
			name = fmt.Sprintf("Équipe-%05d", i)
		}
		tx.MustExec(`INSERT INTO names VALUES (?)`, name)
	}
	require.NoError(b, tx.Commit())
	cond, args := sqldb.ContainsFolded(sqldb.SQLite, "name", "00999")
	for _, c := range []struct {
		name, where string
		args        []any
	}{
		{"floor-builtin", `lower(name) LIKE ?`, []any{"%00999%"}},
		{"go-every-row", `passage_lower(name) LIKE ?`, []any{"%00999%"}},
		{"contains-folded", cond, args},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var n int
				require.NoError(b, db.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM names WHERE `+c.where, c.args...))
				require.Equal(b, 1, n)
			}
		})
	}
}
