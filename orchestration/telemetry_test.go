package orchestration

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/telemetrytest"
)

// collected is one collection of the package's metrics.
type collected struct{ telemetrytest.Collected }

func collect(t *testing.T, reader *sdkmetric.ManualReader) collected {
	t.Helper()
	return collected{telemetrytest.Collect(t, reader, scope)}
}

// workflowOnly requires every series to name a workflow: one attribute,
// the workflow's name — no instance id, nothing unbounded, and never
// none (keyed "").
func workflowOnly[V any](t *testing.T, name string, series map[string]V) {
	t.Helper()
	require.NotContains(t, series, "", "%s: a series without the workflow", name)
}

// counts returns the counter name by workflow, its series that counted
// something.
func (c collected) counts(t *testing.T, name string) map[string]int64 {
	t.Helper()
	series := c.Counts(t, name, "workflow")
	workflowOnly(t, name, series)
	for wf, n := range series {
		if n == 0 {
			delete(series, wf)
		}
	}
	return series
}

// lateness is what the histogram holds for a workflow.
type lateness struct {
	count uint64
	sum   float64
}

func (c collected) lateness(t *testing.T) map[string]lateness {
	t.Helper()
	series := c.Histograms(t, metricLateness, "workflow")
	workflowOnly(t, metricLateness, series)
	out := map[string]lateness{}
	for wf, dp := range series {
		out[wf] = lateness{dp.Count, dp.Sum}
	}
	return out
}

// TestMetricsCountEachTransitionOnceOnCommit drives five workflows on a
// fake clock through every end they can have — completed, failed, stuck,
// cancelled — and through what makes an execution run more than once: a
// second Start of an id, a crash before the batch's write (every instance
// of it replayed), a write lost to another execution's decision (the
// instance replayed on the next tick), and replays by Engine.Replay.
// Each transition counts once: the oracle is the instances' histories
// (how many exist, in which state). The wake-up lateness is the fake
// clock's reading at the tick whose write committed minus the delay's
// end, computed here from each instance's start and sleep (a retry's from
// its recorded retry time); the crashed and the lost executions measure
// nothing, and an instance whose timer another execution recorded over
// is not measured here.
func TestMetricsCountEachTransitionOnceOnCommit(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			mp, reader := telemetrytest.MeterReader(t)
			var stepName atomic.Value
			stepName.Store("v1")
			flaky := atomic.Int32{}
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "nap", func(ctx Context, _ int) (int, error) {
					if err := ctx.Sleep(24 * time.Hour); err != nil {
						return 0, err
					}
					return Step(ctx, "after", func(context.Context, StepInfo) (int, error) { return 1, nil })
				}))
				require.NoError(t, Register(e, "boom", func(ctx Context, _ int) (int, error) {
					return Step(ctx, "charge", func(context.Context, StepInfo) (int, error) {
						return 0, NonRetryable(errors.New("card declined"))
					})
				}))
				require.NoError(t, Register(e, "shifty", func(ctx Context, _ int) (int, error) {
					if _, err := Step(ctx, stepName.Load().(string), func(context.Context, StepInfo) (int, error) { return 1, nil }); err != nil {
						return 0, err
					}
					return 0, ctx.Sleep(time.Minute)
				}))
				require.NoError(t, Register(e, "waits", func(ctx Context, _ int) (int, error) {
					_, _, err := Await[int](ctx, "go", 72*time.Hour)
					return 0, err
				}))
				require.NoError(t, Register(e, "retry", func(ctx Context, _ int) (int, error) {
					return Step(ctx, "flaky", func(context.Context, StepInfo) (int, error) {
						if flaky.Add(1) == 1 {
							return 0, errors.New("try again")
						}
						return 1, nil
					}, WithRetry(RetryPolicy{MaxAttempts: 3, Initial: time.Minute, Max: time.Minute}))
				}))
			}, WithMeterProvider(mp))

			startedAt := map[string]time.Time{}
			start := func(workflow, id string) {
				t.Helper()
				_, err := Start(ctx, w.e, workflow, id, 0)
				require.NoError(t, err)
				if _, ok := startedAt[id]; !ok {
					startedAt[id] = clock.Now()
				}
			}
			// Each nap falls asleep at the tick after its start, for a
			// day from then.
			start("nap", "nap-0")
			w.tick()
			clock.Advance(10 * time.Second)
			start("nap", "nap-1")
			w.tick()
			clock.Advance(15 * time.Second)
			start("nap", "nap-2")
			start("nap", "nap-0") // exists: no start
			for _, wf := range []string{"boom", "shifty", "waits", "retry"} {
				start(wf, wf+"-0")
			}
			w.tick() // nap-2 asleep, boom failed, shifty asleep, waits waiting, retry's first attempt failed
			require.NoError(t, w.e.Cancel(ctx, "waits-0"))
			w.tick() // waits cancelled
			stepName.Store("v2")

			// A day later every delay is over: the first write crashes,
			// so nothing of the batch is stored and all of it replays.
			clock.Advance(24*time.Hour + 37*time.Second)
			crashed := false
			w.e.fault = func([]any) error {
				if !crashed {
					crashed = true
					return errors.New("crash before the batch's write")
				}
				return nil
			}
			_, err := w.p.Process(ctx, clock.Now())
			require.NoError(t, err) // the processor records the failure on the items
			require.True(t, crashed)

			// Then nap-1's write loses to another execution's decision.
			clock.Advance(90 * time.Second)
			raced := false
			w.e.fault = func([]any) error {
				if !raced {
					raced = true
					_, err := w.e.store.Append(ctx, streamOf("nap-1"), eventstore.StreamExists, timerFired{Seq: 0})
					require.NoError(t, err)
				}
				return nil
			}
			committedAt := clock.Now()
			w.tick()
			require.True(t, raced)
			w.e.fault = nil
			st, err := w.e.Status(ctx, "nap-1")
			require.NoError(t, err)
			require.Equal(t, Running, st.State, "nap-1's write lost")
			clock.Advance(time.Minute)
			w.tick() // nap-1 completes
			for id := range startedAt {
				_ = w.e.Replay(ctx, id) // replaying records nothing, counts nothing
			}
			clock.Advance(time.Hour)
			w.tick()

			// The oracle: what the histories say.
			wantStarted := map[string]int64{}
			wantEnded := map[State]map[string]int64{Completed: {}, Failed: {}, Cancelled: {}, Stuck: {}}
			for id := range startedAt {
				st, err := w.e.Status(ctx, id)
				require.NoError(t, err)
				wantStarted[st.Workflow]++
				require.Contains(t, wantEnded, st.State, "%s is %s", id, st.State)
				wantEnded[st.State][st.Workflow]++
			}
			// The scenario went where it was meant to.
			require.Equal(t, map[State]map[string]int64{
				Completed: {"nap": 3, "retry": 1},
				Failed:    {"boom": 1},
				Cancelled: {"waits": 1},
				Stuck:     {"shifty": 1},
			}, wantEnded)
			got := collect(t, reader)
			require.Equal(t, wantStarted, got.counts(t, metricStarted))
			require.Equal(t, wantEnded[Completed], got.counts(t, metricCompleted))
			require.Equal(t, wantEnded[Failed], got.counts(t, metricFailed))
			require.Equal(t, wantEnded[Cancelled], got.counts(t, metricCancelled))
			require.Equal(t, wantEnded[Stuck], got.counts(t, metricStuck))

			// Lateness: nap-0 and nap-2 resumed at committedAt past a
			// day's sleep from the tick after their start (the one at
			// their start); retry-0 past its retry time.
			var napLate float64
			for _, id := range []string{"nap-0", "nap-2"} {
				napLate += committedAt.Sub(startedAt[id].Add(24 * time.Hour)).Seconds()
			}
			var retryAt time.Time
			for _, r := range historyOf(t, w, "retry-0") {
				if f, ok := r.Event.(stepAttemptFailed); ok {
					retryAt = f.RetryAt
				}
			}
			require.False(t, retryAt.IsZero())
			late := got.lateness(t)
			require.Len(t, late, 2, "only nap and retry woke from a delay: %v", late)
			require.Equal(t, uint64(2), late["nap"].count, "nap-0 and nap-2, once each")
			require.InDelta(t, napLate, late["nap"].sum, 1e-6)
			require.Equal(t, uint64(1), late["retry"].count)
			require.InDelta(t, committedAt.Sub(retryAt).Seconds(), late["retry"].sum, 1e-6)
			t.Logf("lateness: nap %v s over %d, retry %v s", late["nap"].sum, late["nap"].count, late["retry"].sum)
		})
	}
}
