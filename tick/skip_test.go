package tick

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// TestSkipsAreReportedOnceWhenThePublishAfterThemFails restarts after
// three days under LatestOnly with a publisher that refuses the one event
// the policy keeps: the retry publishes that event, and the skipped
// boundaries are reported and counted once, not at every attempt.
func TestSkipsAreReportedOnceWhenThePublishAfterThemFails(t *testing.T) {
	t.Parallel()
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, _ := f.open(t)
			start := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
			require.NoError(t, store.Advance(ctx, Hour, time.Time{}, start, 0))
			clock := clockwork.NewFakeClockAt(start.Add(72*time.Hour + 30*time.Minute))
			var observed []TicksSkipped
			rec := &recorder{}
			tk, err := New(rec, store, WithClock(clock), WithUnits(Hour), WithCatchUp(Hour, LatestOnly{}), WithLogger(discard),
				WithObserver(Observer{Skipped: func(s TicksSkipped) { observed = append(observed, s) }}))
			require.NoError(t, err)

			down := errors.New("receiver down")
			refused := 0
			rec.fail = func(e any) error {
				if _, ok := e.(Event); ok && refused < 2 {
					refused++
					return down
				}
				return nil
			}
			require.ErrorIs(t, tk.EmitDue(ctx), down)
			require.ErrorIs(t, tk.EmitDue(ctx), down)
			require.NoError(t, tk.EmitDue(ctx))

			events, skips := rec.take()
			require.Len(t, skips, 1, "reported once: %v", skips)
			require.Equal(t, int64(71), skips[0].Count)
			require.Len(t, observed, 1)
			require.Equal(t, int64(71), tk.Stats().Skipped)
			require.Equal(t, []time.Time{start.Add(72 * time.Hour)}, boundaries(events))
			require.True(t, events[0].Previous().Equal(skips[0].To), "the retry follows the skipped boundaries: %v", events[0].Previous())
			cur, err := store.Cursor(ctx, Hour)
			require.NoError(t, err)
			require.True(t, cur.Equal(start.Add(72*time.Hour)), "cursor %v", cur)
		})
	}
}
