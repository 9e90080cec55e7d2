//go:build !cgo

package sqldb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// TestWithoutCgoSQLiteSaysWhatToDo: built with CGO_ENABLED=0 (.ci/run
// runs this), a SQLite DSN is refused at once with what to do, through
// Open and through the driver the CLI's read-only opens use.
func TestWithoutCgoSQLiteSaysWhatToDo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passage.db")
	_, err := sqldb.Open(context.Background(), path)
	require.ErrorIs(t, err, sqldb.ErrSQLiteNeedsCGO)
	require.ErrorContains(t, err, "CGO_ENABLED=1, or use PostgreSQL")

	db, err := sql.Open(sqldb.SQLiteDriverName, path)
	require.NoError(t, err)
	defer db.Close()
	require.ErrorIs(t, db.Ping(), sqldb.ErrSQLiteNeedsCGO)
}
