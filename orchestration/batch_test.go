package orchestration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// A decision that lands on one instance between the batch's load and its
// write (another processor's, recorded meanwhile) conflicts that instance
// alone: the others of the batch are written, and it is replayed on the
// next tick. (A signal landing there is no conflict: see
// TestASignalDuringAStepDoesNotRunItAgain.)
func TestAConflictOnOneInstanceFailsNoneOfItsBatch(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			fx := &effects{}
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "nap", func(ctx Context, _ int) (int, error) {
					if err := ctx.Sleep(time.Minute); err != nil {
						return 0, err
					}
					return Step(ctx, "after", func(_ context.Context, info StepInfo) (int, error) {
						fx.do(info.Instance)
						return 1, nil
					})
				}))
			})
			for i := range 3 {
				_, err := Start(ctx, w.e, "nap", fmt.Sprint("i-", i), 0)
				require.NoError(t, err)
			}
			w.tick() // all three asleep
			clock.Advance(time.Minute)
			signalled := false
			w.e.fault = func([]any) error {
				if !signalled {
					signalled = true
					// Another execution found the sleep over and recorded
					// it, without touching the instance's to-do item.
					_, err := w.e.store.Append(ctx, streamOf("i-1"), eventstore.StreamExists, timerFired{Seq: 0})
					require.NoError(t, err)
				}
				return nil
			}
			w.tick()
			for _, id := range []string{"i-0", "i-2"} {
				st, err := w.e.Status(ctx, id)
				require.NoError(t, err)
				require.Equal(t, Completed, st.State, id)
			}
			st, err := w.e.Status(ctx, "i-1")
			require.NoError(t, err)
			require.Equal(t, Running, st.State, "the conflicted instance waits for the next tick")

			w.e.fault = nil
			clock.Advance(time.Minute) // the next tick
			w.tick()
			st, err = w.e.Status(ctx, "i-1")
			require.NoError(t, err)
			require.Equal(t, Completed, st.State)
			require.Equal(t, 1, fx.count("i-0"))
			require.Equal(t, 2, fx.count("i-1"), "its step's result was lost with the conflicted write: at least once")
			require.Equal(t, 1, fx.count("i-2"))
		})
	}
}
