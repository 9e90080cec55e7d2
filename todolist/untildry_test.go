package todolist_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

// TestUntilDryTakesAnItemAgainInTheSameTick: an action that re-adds its
// item a minute later, while that is still due, walks it to the tick's
// boundary in one Process call with WithUntilDry — five steps for each of
// three items — where without it a call takes each item once. A tick
// whose actions only conflict ends, the conflicts set past the cutoff (a
// fake clock never ends the time budget).
func TestUntilDryTakesAnItemAgainInTheSameTick(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		steps := map[string]int{}
		stepper := func(l *todolist.List) todolist.TxBatchAction {
			return func(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
				for _, it := range items {
					steps[it.ID]++
					if it.Due.Before(t0) {
						if err := l.AddTx(ctx, tx, it.ID, it.Due.Add(time.Minute)); err != nil {
							return nil, err
						}
					}
				}
				return make([]error, len(items)), nil
			}
		}
		for _, untilDry := range []bool{false, true} {
			clear(steps)
			name := "walk"
			opts := []todolist.ProcessorOption{todolist.WithClock(clock), todolist.WithBatchSize(10)}
			if untilDry {
				name = "walk-until-dry"
				opts = append(opts, todolist.WithUntilDry())
			}
			l := openList(t, db, name, todolist.WithListClock(clock))
			addItems(t, l, t0.Add(-5*time.Minute), "a", "b", "c")
			p, err := todolist.NewTxBatchProcessor(l, stepper(l), opts...)
			require.NoError(t, err)
			_, err = p.Process(ctx, t0)
			require.NoError(t, err)
			if !untilDry {
				require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, steps, "one step an item a call")
				continue
			}
			// Due at -5, -4, -3, -2, -1 minutes: re-added; at 0: done.
			require.Equal(t, map[string]int{"a": 6, "b": 6, "c": 6}, steps, "walked to the boundary in one call")
			stats, err := l.Stats(ctx, t0)
			require.NoError(t, err)
			require.Zero(t, stats.Pending, "every item done")
		}

		conflicts := openList(t, db, "conflicts", todolist.WithListClock(clock))
		addItems(t, conflicts, t0, "x")
		conflict := func(_ context.Context, _ *sqlx.Tx, items []todolist.Item) ([]error, error) {
			errs := make([]error, len(items))
			for i := range errs {
				errs[i] = conflictError{} // left as it is, due at once again
			}
			return errs, nil
		}
		p, err := todolist.NewTxBatchProcessor(conflicts, conflict, todolist.WithClock(clock), todolist.WithUntilDry())
		require.NoError(t, err)
		res, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, 1, res.Conflicts, "taken once: a conflict is not taken again in the tick")
	})
}
