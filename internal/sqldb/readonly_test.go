package sqldb_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestSQLiteConnectionRecoversWhenTheFileIsWritableAgain opens a connection
// while the database file is read-only — SQLite then opens it read-only,
// for good — and makes the file writable again: the next write succeeds,
// because the read-only connection left the pool at its first failure.
func TestSQLiteConnectionRecoversWhenTheFileIsWritableAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "passage.db")
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.ExecContext(ctx, `CREATE TABLE widgets (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	// One connection, so the one opened while read-only is the one every
	// later statement would get back from the pool.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(0) // closes the writable connection now
	db.SetMaxIdleConns(1)

	restore := sqldbtest.MakeReadOnly(t, path)
	_, err = db.ExecContext(ctx, `INSERT INTO widgets DEFAULT VALUES`)
	require.Error(t, err, "the file is read-only")
	require.True(t, sqldb.IsReadOnlyError(err), "SQLITE_READONLY: %v", err)
	var n int
	require.NoError(t, db.GetContext(ctx, &n, `SELECT COUNT(*) FROM widgets`), "reading works meanwhile")

	restore()
	_, err = db.ExecContext(ctx, `INSERT INTO widgets DEFAULT VALUES`)
	require.NoError(t, err, "a connection opened while the file was read-only is not reused")
	require.NoError(t, db.GetContext(ctx, &n, `SELECT COUNT(*) FROM widgets`))
	require.Equal(t, 1, n)
}

func TestIsReadOnlyError(t *testing.T) {
	t.Parallel()
	require.False(t, sqldb.IsReadOnlyError(nil))
	require.False(t, sqldb.IsReadOnlyError(errors.New("attempt to write a readonly database")), "only SQLite's own error")
}

// TestSQLiteReadOnlyDSNKeepsItsConnections: with mode=ro read-only is what
// was asked for, and a connection is not closed after every statement.
func TestSQLiteReadOnlyDSNKeepsItsConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "passage.db")
	rw, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	_, err = rw.ExecContext(ctx, `CREATE TABLE widgets (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	require.NoError(t, rw.Close())

	ro, err := sqldb.Open(ctx, "file:"+path+"?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ro.Close() })
	ro.SetMaxOpenConns(1)
	// A temporary table lives as long as its connection.
	_, err = ro.ExecContext(ctx, `CREATE TEMP TABLE mine (id INTEGER)`)
	require.NoError(t, err)
	_, err = ro.ExecContext(ctx, `INSERT INTO widgets DEFAULT VALUES`)
	require.True(t, sqldb.IsReadOnlyError(err), "read-only as asked: %v", err)
	var n int
	require.NoError(t, ro.GetContext(ctx, &n, `SELECT COUNT(*) FROM mine`), "still the same connection")
}

// TestSQLiteConnectionThatOnlyReadWhileReadOnlyIsNotReused: a connection
// opened while the file is read-only and used only to read is known for
// read-only from its opening (SQLite says so), so the first write after
// the file is writable again gets a fresh connection and succeeds.
func TestSQLiteConnectionThatOnlyReadWhileReadOnlyIsNotReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "passage.db")
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.ExecContext(ctx, `CREATE TABLE widgets (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(0) // closes the writable connection now
	db.SetMaxIdleConns(1)

	restore := sqldbtest.MakeReadOnly(t, path)
	var n int
	require.NoError(t, db.GetContext(ctx, &n, `SELECT COUNT(*) FROM widgets`), "reading works while read-only")
	restore()
	_, err = db.ExecContext(ctx, `INSERT INTO widgets DEFAULT VALUES`)
	require.NoError(t, err, "the connection opened read-only was not put back in the pool")
}

// TestSQLiteAskingWhetherWritableChangesNothing: new connections ask
// SQLite whether they can write with a write they roll back; the
// database's user_version, which that write sets, keeps its value.
func TestSQLiteAskingWhetherWritableChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "passage.db")
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.ExecContext(ctx, `PRAGMA user_version = 7`)
	require.NoError(t, err)
	for range 3 {
		db.SetMaxIdleConns(0) // the next statement opens a new connection
		db.SetMaxIdleConns(1)
		var v int
		require.NoError(t, db.GetContext(ctx, &v, `PRAGMA user_version`))
		require.Equal(t, 7, v)
	}
}
