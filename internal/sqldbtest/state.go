package sqldbtest

import (
	"context"
	"maps"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// HasState is a package's probe of whether a database holds its state
// (tick.HasState, schedule.HasState, …).
type HasState func(ctx context.Context, q sqlx.ExtContext) (bool, error)

// CheckHasState runs a package's HasState against every backend, each
// time on a fresh database: while it holds only another package's table
// (foreign, created here) the probe says false, twice, and creates
// nothing; after migrate (the package's constructor, whose result it
// returns) it says true, through a transaction too. then, when not nil,
// continues on the migrated database with migrate's result.
func CheckHasState[T any](t *testing.T, hasState HasState, foreign string, migrate func(t *testing.T, db *sqldb.DB) T, then func(t *testing.T, db *sqldb.DB, opened T)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			if _, err := db.ExecContext(ctx, `CREATE TABLE `+foreign+` (id TEXT)`); err != nil {
				t.Fatalf("create %s: %v", foreign, err)
			}
			for range 2 {
				if has, err := hasState(ctx, db); err != nil || has {
					t.Fatalf("a database holding only %s: HasState says %v, %v; want false", foreign, has, err)
				}
			}
			tables, err := sqldb.Tables(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]bool{foreign: true}; !maps.Equal(tables, want) {
				t.Fatalf("HasState created tables: %v, want %v", tables, want)
			}
			opened := migrate(t, db)
			tx, err := db.BeginTxx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			has, err := hasState(ctx, tx)
			_ = tx.Rollback()
			if err != nil || !has {
				t.Fatalf("a migrated database: HasState says %v, %v; want true", has, err)
			}
			if then != nil {
				then(t, db, opened)
			}
		})
	}
}
