package tick

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// TestTickerRecoversWhenTheDatabaseIsWritableAgain makes the SQLite file
// read-only while the ticker runs: the pass fails and Health says why and
// since when; once the file is writable again the retry succeeds — its
// connection is not the read-only one — and Health is nil again.
func TestTickerRecoversWhenTheDatabaseIsWritableAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, path := sqldbtest.SQLite(t)
	store, err := NewSQLStore(ctx, db.DB)
	require.NoError(t, err)
	// One connection: the one opened while the file is read-only is the
	// one every later call would get from the pool.
	db.SetMaxOpenConns(1)
	clock := clockwork.NewFakeClockAt(epoch)
	tk, rec := setup(t, clock, store, WithUnits(Minute), WithRetryBackoff(time.Second, time.Minute))
	advance(t, clock, 0, tk) // the first pass records the start
	require.NoError(t, tk.Health())

	db.SetMaxIdleConns(0) // close the writable connection while the ticker waits
	db.SetMaxIdleConns(1)
	restore := sqldbtest.MakeReadOnly(t, path)
	advance(t, clock, 30*time.Second, tk) // 00:01:00: published, the cursor write fails
	failedAt := clock.Now()
	err = tk.Health()
	require.ErrorIs(t, err, ErrUnhealthy)
	require.ErrorContains(t, err, "readonly database")
	require.ErrorContains(t, err, "since "+timefmt.Format(failedAt))
	require.Equal(t, int64(1), tk.Stats().StoreFailures)

	restore()
	advance(t, clock, time.Second, tk) // the retry
	require.NoError(t, tk.Health(), "the retry wrote the cursor")
	m1 := epoch.Truncate(time.Minute).Add(time.Minute)
	cur, err := store.Cursor(ctx, Minute)
	require.NoError(t, err)
	require.True(t, cur.Equal(m1), "cursor %v", cur)
	events, _ := rec.take()
	require.Equal(t, []time.Time{m1, m1}, boundaries(events), "published again by the retry: at least once")

	advance(t, clock, time.Minute-time.Second, tk)
	events, _ = rec.take()
	require.Equal(t, []time.Time{m1.Add(time.Minute)}, boundaries(events), "emitting as before")
}
