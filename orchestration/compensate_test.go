package orchestration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// A cancelled saga whose compensations take more than one execution (one
// fails once) runs them all and ends cancelled; its history replays.
func TestACancelledSagaFinishesItsCompensationsAcrossExecutions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	calls := map[string]int{}
	saga := func(ctx Context, _ int) (int, error) {
		if _, err := Step(ctx, "book", func(context.Context, StepInfo) (int, error) { return 1, nil }); err != nil {
			return 0, err
		}
		Compensate(ctx, "unbook", func(context.Context) error {
			calls["unbook"]++
			if calls["unbook"] == 1 {
				return errors.New("hotel API down")
			}
			return nil
		})
		if _, err := Step(ctx, "pay", func(context.Context, StepInfo) (int, error) { return 2, nil }); err != nil {
			return 0, err
		}
		Compensate(ctx, "refund", func(context.Context) error { calls["refund"]++; return nil })
		return 0, ctx.Sleep(30 * 24 * time.Hour)
	}
	w := newWorld(t, db.DB, clock, func(e *Engine) { require.NoError(t, Register(e, "saga", saga)) })
	_, err := Start(ctx, w.e, "saga", "s", 0)
	require.NoError(t, err)
	w.tick()
	require.NoError(t, w.e.Cancel(ctx, "s"))
	w.tick() // refund runs, unbook fails: retried later
	clock.Advance(time.Minute)
	w.tick()
	st, err := w.e.Status(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, Cancelled, st.State, st.Error)
	require.Equal(t, map[string]int{"refund": 1, "unbook": 2}, calls)
	require.NoError(t, w.e.Replay(ctx, "s"), "a cancelled history replays")
}

// A function that swallows ErrCancelled still ends Cancelled, with its
// compensations run, as Cancel promises.
func TestASwallowedCancelStillCancels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	undone := 0
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "stubborn", func(ctx Context, _ int) (int, error) {
			Compensate(ctx, "undo", func(context.Context) error { undone++; return nil })
			_ = ctx.Sleep(24 * time.Hour) // the error is ignored
			return 1, nil
		}))
	})
	_, err := Start(ctx, w.e, "stubborn", "s", 0)
	require.NoError(t, err)
	w.tick()
	require.NoError(t, w.e.Cancel(ctx, "s"))
	w.tick()
	st, err := w.e.Status(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, Cancelled, st.State)
	require.Equal(t, 1, undone)
}
