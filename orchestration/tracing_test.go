package orchestration

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/telemetrytest"
)

// traceparent reads the trace and span ids out of a W3C traceparent
// ("00-<trace id>-<span id>-<flags>") by hand, as a reader of the history
// would, not through the propagator the engine writes it with.
func traceparent(t *testing.T, s string) (traceID, spanID string) {
	t.Helper()
	parts := strings.Split(s, "-")
	require.Len(t, parts, 4, "traceparent %q", s)
	require.Equal(t, "00", parts[0], "version")
	require.Len(t, parts[1], 32)
	require.Len(t, parts[2], 16)
	return parts[1], parts[2]
}

// startedEvent returns the Started event of an instance's history as
// stored.
func startedEvent(t *testing.T, w *world, instance string) map[string]json.RawMessage {
	t.Helper()
	history, err := ReadHistory(context.Background(), w.db, instance)
	require.NoError(t, err)
	require.Equal(t, "orchestration.Started", history[0].Type)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(history[0].Data, &fields))
	return fields
}

// TestAWorkflowThatSleepsADayIsOneTrace runs a workflow that steps,
// sleeps a day (fake clock), steps, sleeps another day and steps, on both
// backends, each wake-up in a pass whose ctx carries a tick's span. All
// of its spans — Start's, the three wake-ups', the three steps' — carry
// the trace id written in the history's Started event (its traceparent,
// read from the stored JSON); the wake-ups are children of the span it
// names, each step a child of its wake-up, and a step's function gets
// its span in its ctx. Start's span is linked to its caller's span, each
// wake-up to the to-do list's batch span of its pass, itself linked to
// that pass's tick. Spans are stamped with the fake clock: a day apart.
func TestAWorkflowThatSleepsADayIsOneTrace(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			tp, exp := telemetrytest.SpanRecorder(t)
			var mu sync.Mutex
			inStep := map[string]trace.SpanContext{} // the span a step's ctx carries
			step := func(ctx Context, name string) error {
				_, err := Step(ctx, name, func(c context.Context, _ StepInfo) (int, error) {
					mu.Lock()
					inStep[name] = trace.SpanContextFromContext(c)
					mu.Unlock()
					return 1, nil
				})
				return err
			}
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "daily", func(ctx Context, _ int) (int, error) {
					for i, name := range []string{"reserve", "charge", "ship"} {
						if i > 0 {
							if err := ctx.Sleep(24 * time.Hour); err != nil {
								return 0, err
							}
						}
						if err := step(ctx, name); err != nil {
							return 0, err
						}
					}
					return 3, nil
				}))
			}, WithTracerProvider(tp))

			reqCtx, req := tp.Tracer("test").Start(ctx, "POST /orders")
			_, err := Start(reqCtx, w.e, "daily", "d", 0)
			require.NoError(t, err)
			req.End()

			ticks := make([]trace.SpanContext, 3)
			for i := range ticks {
				if i > 0 {
					clock.Advance(24 * time.Hour)
				}
				tickCtx, tick := tp.Tracer("test").Start(ctx, "tick DayHasPassed")
				ticks[i] = tick.SpanContext()
				_, err := w.p.Process(tickCtx, clock.Now())
				require.NoError(t, err)
				tick.End()
			}
			_, st, err := Result[int](ctx, w.e, "d")
			require.NoError(t, err, "%s: %s", st.State, st.Error)

			// The trace recorded in the history, read from the stored JSON.
			var recorded map[string]string
			require.NoError(t, json.Unmarshal(startedEvent(t, w, "d")["Trace"], &recorded))
			traceID, rootID := traceparent(t, recorded["traceparent"])
			history, err := ReadHistory(ctx, w.db, "d")
			require.NoError(t, err)
			require.Equal(t, "started daily (input 0), trace "+traceID, history[0].Describe(time.UTC), "an operator finds the trace from the history")

			starts := telemetrytest.SpansNamed(exp, "workflow.start daily")
			require.Len(t, starts, 1)
			root := starts[0]
			require.Equal(t, traceID, root.SpanContext.TraceID().String())
			require.Equal(t, rootID, root.SpanContext.SpanID().String(), "the history names Start's span")
			require.False(t, root.Parent.IsValid(), "the instance's trace is its own")
			require.Len(t, root.Links, 1)
			require.Equal(t, req.SpanContext(), root.Links[0].SpanContext, "linked to the caller's span")

			batches := map[trace.SpanID]tracetest.SpanStub{}
			for _, s := range telemetrytest.SpansNamed(exp, "todolist.batch "+listName) {
				batches[s.SpanContext.SpanID()] = s
			}
			wakeups := telemetrytest.SpansNamed(exp, "workflow.wakeup daily")
			require.Len(t, wakeups, 3, "one per execution")
			for i, s := range wakeups {
				require.Equal(t, traceID, s.SpanContext.TraceID().String(), "wake-up %d shares the trace", i)
				require.Equal(t, rootID, s.Parent.SpanID().String(), "wake-up %d is a child of Start's span", i)
				require.True(t, s.Parent.IsRemote())
				require.Equal(t, t0.Add(time.Duration(i)*24*time.Hour), s.StartTime, "stamped with the fake clock")
				a := telemetrytest.Attrs(s)
				require.Equal(t, "d", a[attrInstance].AsString())
				require.Equal(t, "daily", a[attrWorkflow].AsString())
				want := "suspended"
				if i == 2 {
					want = "completed"
				}
				require.Equal(t, want, a[attrOutcome].AsString())
				require.Len(t, s.Links, 1)
				batch, ok := batches[s.Links[0].SpanContext.SpanID()]
				require.True(t, ok, "wake-up %d is linked to its pass's batch span", i)
				require.Len(t, batch.Links, 1)
				require.Equal(t, ticks[i], batch.Links[0].SpanContext, "the batch span of wake-up %d is linked to its tick", i)
			}

			for i, name := range []string{"reserve", "charge", "ship"} {
				spans := telemetrytest.SpansNamed(exp, "workflow.step daily/"+name)
				require.Len(t, spans, 1, "step %s ran once", name)
				s := spans[0]
				require.Equal(t, traceID, s.SpanContext.TraceID().String(), "step %s is in the instance's trace", name)
				require.Equal(t, wakeups[i].SpanContext.SpanID(), s.Parent.SpanID(), "step %s is a child of its wake-up", name)
				require.Equal(t, t0.Add(time.Duration(i)*24*time.Hour), s.StartTime)
				require.Equal(t, s.SpanContext, inStep[name], "the step's ctx carries its span")
				a := telemetrytest.Attrs(s)
				require.Equal(t, name, a[attrStep].AsString())
				require.Equal(t, int64(1), a[attrAttempt].AsInt64())
			}
		})
	}
}

// An instance started while no span records has no trace context in its
// history (its Started event is as it always was, which is also how
// histories older than tracing read); woken by an engine that traces, it
// still runs, each wake-up a trace of its own. Its steps are traced all
// the same.
func TestAnInstanceWithoutARecordedTraceWakesInATraceOfItsOwn(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			register := func(e *Engine) {
				require.NoError(t, Register(e, "nap", func(ctx Context, _ int) (int, error) {
					if err := ctx.Sleep(time.Hour); err != nil {
						return 0, err
					}
					return Step(ctx, "after", func(context.Context, StepInfo) (int, error) { return 1, nil })
				}))
			}
			untraced := newWorld(t, db.DB, clock, register, WithTracerProvider(tracenoop.NewTracerProvider()))
			_, err := Start(ctx, untraced.e, "nap", "n", 0)
			require.NoError(t, err)
			fields := startedEvent(t, untraced, "n")
			require.NotContains(t, fields, "Trace", "nothing recorded without a span")
			require.ElementsMatch(t, []string{"Workflow", "Input", "At"}, keys(fields), "the Started event as it always was")

			tp, exp := telemetrytest.SpanRecorder(t)
			traced := newWorld(t, db.DB, clock, register, WithTracerProvider(tp))
			traced.tick()
			clock.Advance(time.Hour)
			traced.tick()
			_, st, err := Result[int](ctx, traced.e, "n")
			require.NoError(t, err, "%s: %s", st.State, st.Error)

			wakeups := telemetrytest.SpansNamed(exp, "workflow.wakeup nap")
			require.Len(t, wakeups, 2)
			for _, s := range wakeups {
				require.False(t, s.Parent.IsValid(), "a root: there is no recorded context")
			}
			require.NotEqual(t, wakeups[0].SpanContext.TraceID(), wakeups[1].SpanContext.TraceID())
			steps := telemetrytest.SpansNamed(exp, "workflow.step nap/after")
			require.Len(t, steps, 1)
			require.Equal(t, wakeups[1].SpanContext.SpanID(), steps[0].Parent.SpanID())
		})
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
