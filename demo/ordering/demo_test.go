package ordering_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

func TestRunDemoSummaryMatchesTheEventStore(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		ctx := context.Background()
		db, _ := backend.Open(t)
		var out bytes.Buffer
		clock := clockwork.NewFakeClockAt(start)
		s, err := ordering.RunDemo(ctx, &out, db.DB, ordering.DemoConfig{Orders: 60, PaidShare: 0.5, Seed: 3, Clock: clock})
		require.NoError(t, err)

		require.Equal(t, ordering.Summary{
			Placed: 60, Paid: 30, LastMoment: 6, Completed: 30, CancelledByTimeout: 30,
			ConflictsResolved: 6, Elapsed: s.Elapsed,
		}, s)
		require.LessOrEqual(t, s.Elapsed, 16*time.Minute)
		require.Equal(t, start.Add(s.Elapsed), clock.Now())

		var counts []struct {
			Type  string
			Count int
		}
		require.NoError(t, db.SelectContext(ctx, &counts, `SELECT type, COUNT(*) AS count FROM eventstore_events GROUP BY type ORDER BY type`))
		require.Equal(t, []struct {
			Type  string
			Count int
		}{
			{ordering.EventOrderCancelled, 30},
			{ordering.EventOrderCompleted, 30},
			{ordering.EventOrderInitiated, 60},
			{ordering.EventOrderPaymentRecorded, 30},
		}, counts)
		var timedOut int
		require.NoError(t, db.GetContext(ctx, &timedOut, db.Rebind(`SELECT COUNT(DISTINCT stream) FROM eventstore_events WHERE type = ?`), ordering.EventOrderCancelled))
		require.Equal(t, 30, timedOut, "each cancelled once")

		require.Contains(t, out.String(), "conflicts resolved         6\n")
		require.Contains(t, out.String(), "paid at the last moment")
	})
}

func TestRunDemoWithNoPayments(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	s, err := ordering.RunDemo(context.Background(), &bytes.Buffer{}, db.DB, ordering.DemoConfig{Orders: 5, PaidShare: ordering.NoneWillPay})
	require.NoError(t, err)
	require.Equal(t, 5, s.CancelledByTimeout)
	require.Zero(t, s.Paid)
}

func TestRunDemoRejectsBadConfig(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	for _, tc := range []struct {
		cfg  ordering.DemoConfig
		want string
	}{
		{ordering.DemoConfig{Orders: -1}, "demo orders must be between 1 and 1000000, got -1"},
		{ordering.DemoConfig{Orders: ordering.DemoMaxOrders + 1}, "got 1000001"},
		{ordering.DemoConfig{PaidShare: 1.5}, "demo paid share must be between 0 and 1, got 1.5"},
	} {
		var out bytes.Buffer
		_, err := ordering.RunDemo(context.Background(), &out, db.DB, tc.cfg)
		require.ErrorIs(t, err, ordering.ErrInvalidConfig)
		require.ErrorContains(t, err, tc.want)
		require.Empty(t, out.String())
	}
	_, err := ordering.RunDemo(context.Background(), &bytes.Buffer{}, nil, ordering.DemoConfig{})
	require.ErrorIs(t, err, ordering.ErrInvalidConfig)
}
