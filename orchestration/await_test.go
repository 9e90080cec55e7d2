package orchestration

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

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
