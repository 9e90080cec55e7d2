package todolist_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

// ReadFailing and ReadLateness count what reading every item with Get
// counts (the oracle), on both backends.
func TestReadFailingAndLatenessCountWhatTheItemsSay(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		other := openList(t, db, "other", todolist.WithListClock(clock))
		var ids []string
		for i := range 60 {
			id := fmt.Sprintf("item-%02d", i)
			require.NoError(t, l.Add(ctx, id, t0.Add(-time.Duration(i*i)*time.Minute)))
			ids = append(ids, id)
		}
		require.NoError(t, other.Add(ctx, "x", t0.Add(-time.Hour)))
		p := newProcessor(t, l, clock, fail, todolist.WithMaxAttempts(2), todolist.WithBackoff(time.Hour, time.Hour), todolist.WithBatchSize(10))
		_, err := p.Process(ctx, t0) // some fail once, back off an hour
		require.NoError(t, err)
		clock.Advance(30 * time.Minute)
		now := clock.Now()

		bounds := []time.Duration{time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour}
		want := make([]int, len(bounds)+1)
		failing := 0
		for _, id := range ids {
			it, err := l.Get(ctx, id)
			require.NoError(t, err)
			if it.Attempts > 0 && !it.Parked {
				failing++
			}
			if it.Parked || it.Due.After(now) {
				continue
			}
			late, b := now.Sub(it.Due), 0
			for b < len(bounds) && late >= bounds[b] {
				b++
			}
			want[b]++
		}
		require.Positive(t, failing)
		got, err := todolist.ReadFailing(ctx, db)
		require.NoError(t, err)
		require.Equal(t, map[string]int{"orders": failing}, got)
		lateness, err := todolist.ReadLateness(ctx, db, "orders", now, bounds)
		require.NoError(t, err)
		require.Equal(t, want, lateness)
		_, err = todolist.ReadLateness(ctx, db, "orders", now, []time.Duration{time.Hour, time.Minute})
		require.ErrorContains(t, err, "increasing")
	})
}
