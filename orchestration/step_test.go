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

// A retry policy with a zero Max still waits between attempts.
func TestARetryPolicyWithoutMaxStillWaits(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Second, RetryPolicy{MaxAttempts: 5, Initial: time.Second}.wait(1).Truncate(time.Second))
	require.Positive(t, RetryPolicy{MaxAttempts: 5}.wait(3))
}
