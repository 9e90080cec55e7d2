package todolist_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/telemetrytest"
	"github.com/passage-of-time/passage/todolist"
)

// TestEachActionRunsInASpanLinkedToTheTick works three items, done,
// failed and conflicting, in a pass whose ctx carries the span of the
// tick that caused it, on both backends: each action has one span of its
// own, in a new trace linked to the tick's, that its ctx carries; it
// names the list and the item and gives the item's due time and its
// lateness as the test's fake clock measured it; the failure's span has
// status Error and the error recorded, the conflict's is marked and not
// an error. A pass without a traced tick has spans without links.
func TestEachActionRunsInASpanLinkedToTheTick(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		tp, exp := telemetrytest.SpanRecorder(t)
		l := openList(t, db, "traced", todolist.WithListClock(clock), todolist.WithTracerProvider(tp))
		due := map[string]time.Time{"a": t0.Add(-time.Minute), "b": t0.Add(-20 * time.Second), "c": t0.Add(-5 * time.Second)}
		for id, at := range due {
			require.NoError(t, l.Add(ctx, id, at))
		}
		var mu sync.Mutex
		started := map[string]time.Time{}       // by the test's clock
		inCtx := map[string]trace.SpanContext{} // the span the action's ctx carries
		p := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			mu.Lock()
			started[it.ID], inCtx[it.ID] = clock.Now(), trace.SpanContextFromContext(ctx)
			mu.Unlock()
			switch it.ID {
			case "a":
				clock.Advance(3 * time.Second) // b and c start later
			case "b":
				return errFailed
			case "c":
				return conflictError{}
			}
			return nil
		})

		tickCtx, tick := tp.Tracer("test").Start(ctx, "tick MinuteHasPassed")
		_, err := p.Process(tickCtx, clock.Now())
		require.NoError(t, err)
		tick.End()

		var spans []tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.Name == "todolist.action traced" {
				spans = append(spans, s)
			}
		}
		require.Len(t, spans, 3, "one span per action")
		seen := map[string]bool{}
		for _, s := range spans {
			a := telemetrytest.Attrs(s)
			id := a["passage.todolist.item.id"].AsString()
			require.False(t, seen[id], "one span for %s", id)
			seen[id] = true
			require.Equal(t, "traced", a["passage.todolist.list"].AsString())
			require.Equal(t, due[id].UTC().Format(time.RFC3339Nano), a["passage.todolist.item.due"].AsString())
			require.InDelta(t, started[id].Sub(due[id]).Seconds(), a["passage.todolist.lateness"].AsFloat64(), 1e-9, id)
			require.EqualValues(t, 0, a["passage.todolist.item.attempts"].AsInt64())
			require.True(t, s.StartTime.Equal(started[id]), "%s started at %v, span at %v", id, started[id], s.StartTime)
			require.Equal(t, inCtx[id], s.SpanContext, "the action's ctx carries its span")
			require.False(t, s.Parent.IsValid(), "a trace of its own")
			require.NotEqual(t, tick.SpanContext().TraceID(), s.SpanContext.TraceID())
			require.Len(t, s.Links, 1)
			require.Equal(t, tick.SpanContext(), s.Links[0].SpanContext, "linked to the tick")
			switch id {
			case "a":
				require.Equal(t, codes.Unset, s.Status.Code)
				require.Empty(t, s.Events)
			case "b":
				require.Equal(t, codes.Error, s.Status.Code)
				require.Equal(t, errFailed.Error(), s.Status.Description)
				require.Len(t, s.Events, 1)
				require.Equal(t, "exception", s.Events[0].Name)
			case "c":
				require.Equal(t, codes.Unset, s.Status.Code, "a conflict is no failure")
				require.True(t, a["passage.todolist.conflict"].AsBool())
			}
		}
		require.Len(t, seen, 3)

		// The next pass has no tick span: c, retried, has no link.
		exp.Reset()
		clock.Advance(time.Second)
		_, err = p.Process(ctx, clock.Now())
		require.NoError(t, err)
		spans = exp.GetSpans()
		require.Len(t, spans, 1)
		require.Equal(t, "c", telemetrytest.Attrs(spans[0])["passage.todolist.item.id"].AsString())
		require.Empty(t, spans[0].Links)
	})
}

// TestABatchActionRunsInOneSpan: a batch action's call has one span,
// linked to the tick, with the batch's size and its earliest item's due
// time and lateness, and each failed item's error recorded with its ID.
func TestABatchActionRunsInOneSpan(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		tp, exp := telemetrytest.SpanRecorder(t)
		l := openList(t, db, "batched", todolist.WithListClock(clock), todolist.WithTracerProvider(tp))
		first := t0.Add(-time.Hour)
		require.NoError(t, l.Add(ctx, "x", first))
		require.NoError(t, l.Add(ctx, "y", t0.Add(-time.Minute)))
		var inCtx trace.SpanContext
		p, err := todolist.NewBatchProcessor(l, func(ctx context.Context, items []todolist.Item) ([]error, error) {
			inCtx = trace.SpanContextFromContext(ctx)
			return []error{nil, errFailed}, nil
		}, todolist.WithClock(clock))
		require.NoError(t, err)
		tickCtx, tick := tp.Tracer("test").Start(ctx, "tick")
		_, err = p.Process(tickCtx, clock.Now())
		require.NoError(t, err)
		tick.End()

		var spans []tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.Name == "todolist.batch batched" {
				spans = append(spans, s)
			}
		}
		require.Len(t, spans, 1)
		s, a := spans[0], telemetrytest.Attrs(spans[0])
		require.EqualValues(t, 2, a["passage.todolist.batch.size"].AsInt64())
		require.Equal(t, first.UTC().Format(time.RFC3339Nano), a["passage.todolist.item.due"].AsString())
		require.InDelta(t, time.Hour.Seconds(), a["passage.todolist.lateness"].AsFloat64(), 1e-9)
		require.EqualValues(t, 1, a["passage.todolist.batch.failed"].AsInt64())
		require.Equal(t, inCtx, s.SpanContext)
		require.Len(t, s.Links, 1)
		require.Equal(t, tick.SpanContext(), s.Links[0].SpanContext)
		require.Equal(t, codes.Error, s.Status.Code)
		require.Len(t, s.Events, 1)
		require.Contains(t, s.Events[0].Attributes, attribute.String("passage.todolist.item.id", "y"))
	})
}
