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

// The idempotency key is the same for every attempt of a step, and two
// steps of the same name get different keys.
func TestTheIdempotencyKeyIsTheStepsOwnOnEveryAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	keys := map[string][]string{}
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "keys", func(ctx Context, _ int) (int, error) {
			_ = ctx.NewID() // recorded in the same execution as the first attempt
			for _, name := range []string{"r", "r"} {
				if _, err := Step(ctx, name, func(_ context.Context, info StepInfo) (int, error) {
					keys[name] = append(keys[name], info.Key)
					return 0, nil
				}); err != nil {
					return 0, err
				}
			}
			return Step(ctx, "charge", func(_ context.Context, info StepInfo) (int, error) {
				keys["charge"] = append(keys["charge"], info.Key)
				if len(keys["charge"]) == 1 {
					return 0, errors.New("timeout (the provider did charge)")
				}
				return 1, nil
			}, WithRetry(RetryPolicy{MaxAttempts: 2, Initial: time.Second, Max: time.Second}))
		}))
	})
	_, err := Start(ctx, w.e, "keys", "k", 0)
	require.NoError(t, err)
	w.runUntilQuiet(t0.Add(time.Hour))
	_, _, err = Result[int](ctx, w.e, "k")
	require.NoError(t, err)
	require.Len(t, keys["r"], 2)
	require.NotEqual(t, keys["r"][0], keys["r"][1], "two steps, two keys")
	require.Len(t, keys["charge"], 2)
	require.Equal(t, keys["charge"][0], keys["charge"][1], "a retry sends the same key")
}

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

// A signal that lands while an instance re-suspends with nothing new to
// record is not hidden behind the old wake-up: the write checks the
// stream's version and the instance stays due.
func TestASignalDuringAReSuspendIsNotPostponed(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "wait", func(ctx Context, _ int) (string, error) {
					v, ok, err := Await[string](ctx, "shipped", 72*time.Hour)
					if err != nil || !ok {
						return "timed out", err
					}
					return v, nil
				}))
			})
			_, err := Start(ctx, w.e, "wait", "i", 0)
			require.NoError(t, err)
			w.tick() // awaiting for 72 hours
			require.NoError(t, w.e.Signal(ctx, "i", "unrelated", nil))
			sent := false
			w.e.fault = func([]any) error {
				if !sent { // between the batch's load and its write
					sent = true
					require.NoError(t, w.e.Signal(ctx, "i", "shipped", "1Z"))
				}
				return nil
			}
			w.tick() // replays, finds no "shipped" yet, would re-suspend
			require.True(t, sent)
			w.e.fault = nil
			clock.Advance(time.Minute)
			w.tick()
			out, _, err := Result[string](ctx, w.e, "i")
			require.NoError(t, err)
			require.Equal(t, "1Z", out, "taken at the next tick, not after 72 hours")
		})
	}
}

// Now and NewID after a suspension record nothing, so the next replay
// does not disagree with the history.
func TestNowAfterASuspensionRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "log", func(ctx Context, _ int) (int, error) {
			err := ctx.Sleep(time.Minute)
			_, _ = ctx.Now(), ctx.NewID() // logging before looking at err
			return 1, err
		}))
	})
	_, err := Start(ctx, w.e, "log", "i", 0)
	require.NoError(t, err)
	w.tick()
	clock.Advance(time.Minute)
	w.tick()
	_, st, err := Result[int](ctx, w.e, "i")
	require.NoError(t, err, "%s: %s", st.State, st.Error)
}

// A retry policy with a zero Max still waits between attempts.
func TestARetryPolicyWithoutMaxStillWaits(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Second, RetryPolicy{MaxAttempts: 5, Initial: time.Second}.wait(1).Truncate(time.Second))
	require.Positive(t, RetryPolicy{MaxAttempts: 5}.wait(3))
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
