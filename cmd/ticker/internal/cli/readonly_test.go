package cli_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// sqliteTables lists a SQLite file's tables through a read-only connection.
func sqliteTables(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	return names
}

func TestStatusOnNothingSaysSoAndCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	r := run(t, nil, nil, "status", "--db", missing)
	require.Equal(t, cli.ExitError, r.code)
	require.Contains(t, r.stderr, "--db "+missing+": no such database (nothing was created)")
	_, err := os.Stat(missing)
	require.True(t, os.IsNotExist(err), "status created %s", missing)

	ctx := context.Background()
	other := filepath.Join(dir, "other.db")
	db, err := sqldb.Open(ctx, other)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE invoices (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	before := fileState(t, other)
	r = run(t, nil, nil, "status", "--db", other)
	require.Equal(t, cli.ExitError, r.code)
	require.Equal(t, before, fileState(t, other), "status created or changed no file")
	require.Contains(t, r.stderr, "holds no ticker state")
	require.Equal(t, []string{"invoices"}, sqliteTables(t, other), "status created no tables")
}

// holdWriteLock opens path as another process would and holds a write
// transaction on it until the test ends.
func holdWriteLock(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `CREATE TABLE held (id INTEGER)`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = tx.Rollback()
		_ = db.Close()
	})
}

func TestStatusAnswersWhileAnotherProcessWrites(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", path).code)
	holdWriteLock(t, path)

	began := time.Now()
	r := runGuarded(t, clock, "status", "--db", path, "--json")
	took := time.Since(began)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Less(t, took, time.Second, "status waited for the writer")
	require.Contains(t, r.stdout, `"unit": "minute"`)
}

func TestMetricsAnswerWhileAnotherProcessWrites(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := filepath.Join(t.TempDir(), "passage.db")
	// Without schedules: the scheduler would create its to-do list tables,
	// and this test checks that /metrics creates none.
	r := startRun(t, clock, "--db", path, "--units", "minute", "--http", "127.0.0.1:0", "--schedules=false")
	// Cleanups run last first: the writer lets go, then the run stops.
	t.Cleanup(func() { require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String()) })
	holdWriteLock(t, path)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, serverURL(t, r)+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "/metrics must answer within a second")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	// Read in the same collection as the to-do lists, after them: none
	// shows if that read failed.
	require.Contains(t, string(body), "# TYPE passage_delivery_backlog gauge")
	require.NotContains(t, string(body), "unavailable")
	require.NotContains(t, sqliteTables(t, path), "todolist_items", "/metrics created no tables")
}

// serverURL is the base URL a run serving --http printed.
func serverURL(t *testing.T, r *background) string {
	t.Helper()
	_, addr, ok := strings.Cut(r.stderr.String(), "serving /healthz, /metrics and the dashboard on ")
	require.True(t, ok, r.stderr.String())
	return strings.TrimSpace(strings.SplitN(addr, "\n", 2)[0])
}

func TestStatusOnPostgresIsReadOnly(t *testing.T) {
	t.Parallel()
	db, dsn := sqldbtest.Postgres(t) // skips without PASSAGE_TEST_POSTGRES

	r := run(t, nil, nil, "status", "--db", dsn)
	require.Equal(t, cli.ExitError, r.code, r.stdout)
	require.Contains(t, r.stderr, "holds no ticker state")
	var n int
	require.NoError(t, db.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()`))
	require.Zero(t, n, "status created tables")

	// With a ticker's state, status reads it.
	clock := clockwork.NewFakeClockAt(start)
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", dsn, "--units", "hour").code)
	r = run(t, clock, nil, "status", "--db", dsn)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Regexp(t, `hour\s+2026-11-21T12:00:00Z`, r.stdout)
}
