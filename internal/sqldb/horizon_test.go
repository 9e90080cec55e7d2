package sqldb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestHorizonHoldersNameASessionIdleInATransaction: a session whose
// transaction holds an xid and went idle, as a forgotten psql does, is
// named — its pid, application, state — once it has been open longer than
// asked; one whose transaction only read holds nothing back and is not;
// nor is the session asking; SQLite has none.
func TestHorizonHoldersNameASessionIdleInATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lite, _ := sqldbtest.SQLite(t)
	none, err := sqldb.HorizonHolders(ctx, lite.DB, 0, 10)
	require.NoError(t, err)
	require.Empty(t, none)

	held := sqldbtest.HoldHorizon(t)
	asker, _ := sqldbtest.Postgres(t)
	reader, err := asker.BeginTxx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reader.Rollback() })
	var readerPID int
	require.NoError(t, reader.GetContext(ctx, &readerPID, `SELECT pg_backend_pid()`)) // read only: no xid

	const olderThan = 200 * time.Millisecond
	named := func() (sqldb.HorizonHolder, bool) {
		holders, err := sqldb.HorizonHolders(ctx, asker.DB, olderThan, 100)
		require.NoError(t, err)
		for _, h := range holders {
			require.GreaterOrEqual(t, h.Open, olderThan, "only sessions open for longer than asked: %s", h)
			require.NotEqual(t, readerPID, h.PID, "a transaction that only read holds nothing back")
			if h.PID == held.PID {
				return h, true
			}
		}
		return sqldb.HorizonHolder{}, false
	}
	// Waits for the server to say it: the transaction's age, by its clock.
	var h sqldb.HorizonHolder
	require.Eventually(t, func() bool { var ok bool; h, ok = named(); return ok }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, held.Application, h.Application)
	require.Equal(t, "idle in transaction", h.State)
	require.Contains(t, h.String(), held.Named())

	require.NoError(t, held.End())
	require.Eventually(t, func() bool { _, ok := named(); return !ok }, 10*time.Second, 20*time.Millisecond, "no longer named once it ended")
}
