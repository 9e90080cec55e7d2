package sqldb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

func TestTablesListsWhatTheDatabaseHoldsAndCreatesNothing(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			for range 2 {
				tables, err := sqldb.Tables(ctx, db)
				require.NoError(t, err)
				require.Empty(t, tables, "a new database holds no tables, and reading creates none")
			}
			for _, stmt := range []string{
				`CREATE TABLE invoices (id INTEGER PRIMARY KEY)`,
				`CREATE TABLE "Mixed Case" (id INTEGER PRIMARY KEY)`,
				`CREATE VIEW unpaid AS SELECT id FROM invoices`,
				`CREATE INDEX invoices_id ON invoices (id)`,
			} {
				_, err := db.ExecContext(ctx, stmt)
				require.NoError(t, err)
			}
			tables, err := sqldb.Tables(ctx, db)
			require.NoError(t, err)
			if db.IsPostgres() {
				// information_schema.tables lists views too: the
				// inspection only asks for the packages' own tables.
				delete(tables, "unpaid")
			}
			require.Equal(t, map[string]bool{"invoices": true, "Mixed Case": true}, tables)

			// Through a transaction too.
			tx, err := db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			inTx, err := sqldb.Tables(ctx, tx)
			require.NoError(t, err)
			require.True(t, inTx["invoices"])
		})
	}
}

// On PostgreSQL only the schemas on the search path count: another
// test's (or tenant's) schema is not this database's state.
func TestTablesOnPostgresSeesTheSearchPathAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mine, _ := sqldbtest.Postgres(t)
	theirs, _ := sqldbtest.Postgres(t)
	_, err := theirs.ExecContext(ctx, `CREATE TABLE todolist_items (id INTEGER)`)
	require.NoError(t, err)
	tables, err := sqldb.Tables(ctx, mine)
	require.NoError(t, err)
	require.Empty(t, tables)
	tables, err = sqldb.Tables(ctx, theirs)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"todolist_items": true}, tables)
}
