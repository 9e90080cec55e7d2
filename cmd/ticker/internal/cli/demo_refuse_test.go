package cli_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/sqldb"
)

// fileState is what must not change about a refused database.
func fileState(t *testing.T, path string) string {
	t.Helper()
	var state []string
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			state = append(state, p+": none")
			continue
		}
		require.NoError(t, err)
		state = append(state, fmt.Sprintf("%s: %x", p, sha256.Sum256(b)))
	}
	return strings.Join(state, "\n")
}

func TestDemoRefusesADatabaseThatHoldsAnything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()

	// A real ticker's database, and one holding someone else's table.
	ticker := filepath.Join(dir, "ticker.db")
	require.Equal(t, cli.ExitOK, run(t, clockwork.NewFakeClockAt(start), nil, "run", "--once", "--db", ticker).code)
	other := filepath.Join(dir, "other.db")
	db, err := sqldb.Open(ctx, other)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE invoices (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	// An earlier demo's database: a second story on it would come out wrong.
	demo := filepath.Join(dir, "demo.db")
	require.Equal(t, cli.ExitOK, run(t, nil, nil, "demo", "--db", demo, "--orders", "3").code)

	for _, path := range []string{ticker, other, demo} {
		before := fileState(t, path)
		r := run(t, nil, nil, "demo", "--db", path, "--orders", "3")
		require.Equal(t, cli.ExitError, r.code, "%s: %s", path, r.stdout)
		require.Contains(t, r.stderr, "not empty")
		require.Empty(t, r.stdout, "the story did not start")
		require.Equal(t, before, fileState(t, path), "%s unchanged", path)
	}

	// A new file and an empty one are fine.
	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for _, path := range []string{filepath.Join(dir, "new.db"), empty} {
		r := run(t, nil, nil, "demo", "--db", path, "--orders", "3")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
}

func TestDemoRejectsNonFiniteAndOutOfRangeShares(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"NaN", "nan", "Inf", "-Inf", "-0.1", "1.5"} {
		r := run(t, nil, nil, "demo", "--paid", v)
		require.Equal(t, cli.ExitUsage, r.code, "--paid %s: %s", v, r.stdout)
		require.Contains(t, r.stderr, "--paid ")
		require.Contains(t, r.stderr, "must be between 0 and 1")
	}
}
