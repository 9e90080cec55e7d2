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

// receipt is a step result that marshals but does not unmarshal back: a
// non-nil error field marshals as {} and an error interface takes no
// object.
type receipt struct {
	ID  string
	Err error
}

// A step whose side effect ran and whose result was not recorded yet (it
// goes with the next append) is still recorded when the instance becomes
// stuck at that step: the history keeps what happened, then the stuck
// event, and inspection shows both.
func TestAStuckInstanceKeepsTheStepsItRanBeforeItStuck(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			fx := &effects{}
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "pay", func(ctx Context, _ int) (string, error) {
					if err := ctx.Sleep(time.Minute); err != nil {
						return "", err
					}
					id := ctx.NewID()
					if _, err := Step(ctx, "reserve", func(context.Context, StepInfo) (int, error) { fx.do("reserve"); return 7, nil }); err != nil {
						return "", err
					}
					r, err := Step(ctx, "charge", func(context.Context, StepInfo) (receipt, error) {
						fx.do("charge")
						return receipt{ID: "ch_1", Err: errors.New("soft decline, retried by the provider")}, nil
					})
					if err != nil {
						return "", err
					}
					return id + r.ID, nil
				}))
			})
			_, err := Start(ctx, w.e, "pay", "p", 0)
			require.NoError(t, err)
			w.tick() // sleeping
			clock.Advance(time.Minute)
			w.tick() // the timer is over; reserve and charge run; stuck

			st, err := w.e.Status(ctx, "p")
			require.NoError(t, err)
			require.Equal(t, Stuck, st.State)
			require.Contains(t, st.Error, `step "charge"`)
			require.Equal(t, 1, fx.count("reserve"))
			require.Equal(t, 1, fx.count("charge"))

			history, err := ReadHistory(ctx, db.DB, "p")
			require.NoError(t, err)
			var kinds []string
			for _, h := range history {
				kinds = append(kinds, h.Type)
			}
			require.Equal(t, []string{
				"orchestration.Started",
				"orchestration.TimerScheduled",
				"orchestration.TimerFired",
				"orchestration.IDRecorded",
				"orchestration.StepCompleted",
				"orchestration.StepCompleted",
				"orchestration.Stuck",
			}, kinds, "everything the execution did before it stuck is recorded, then the stuck event")
			charged, ok := history[5].event.(stepCompleted)
			require.True(t, ok)
			require.Equal(t, "charge", charged.Name)
			require.JSONEq(t, `{"ID":"ch_1","Err":{}}`, string(charged.Result), "the charge the provider made is in the history")
			require.Equal(t, int64(len(history)), st.Events)

			// Nothing runs again: the instance is stuck, not retried.
			clock.Advance(time.Hour)
			w.tick()
			require.Equal(t, 1, fx.count("charge"))
		})
	}
}
