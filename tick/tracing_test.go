package tick

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/internal/telemetrytest"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// seen is what the bus's handlers found in their ctx.
type seen struct {
	mu      sync.Mutex
	minutes map[string]trace.SpanContext // by boundary
	skips   []trace.SpanContext
}

// Each event reaches the handlers subscribed on the bus with the span of
// its emission in their ctx — valid, and the very span the exporter got —
// so that their spans link to the tick that caused them; a skip report
// likewise. The spans hold the unit, the boundary, catch-up and the lag
// (from the boundary to the clock at the emission), and start new traces.
func TestHandlersGetTheSpanOfTheEmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := bus.New()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close(context.Background())) })
	got := &seen{minutes: map[string]trace.SpanContext{}}
	_, err = bus.Subscribe(b, func(ctx context.Context, e MinuteHasPassed) error {
		got.mu.Lock()
		defer got.mu.Unlock()
		got.minutes[timefmt.Format(e.Boundary())] = trace.SpanContextFromContext(ctx)
		return nil
	})
	require.NoError(t, err)
	_, err = bus.Subscribe(b, func(ctx context.Context, s TicksSkipped) error {
		got.mu.Lock()
		defer got.mu.Unlock()
		got.skips = append(got.skips, trace.SpanContextFromContext(ctx))
		return nil
	})
	require.NoError(t, err)

	store := NewMemoryStore()
	cursor := epoch.Add(-3*time.Minute - 30*time.Second) // 23:57: 23:58 and 23:59 skipped, 00:00 a catch-up
	require.NoError(t, store.Advance(ctx, Minute, time.Time{}, cursor, 0))
	tp, exp := telemetrytest.SpanRecorder(t)
	clock := clockwork.NewFakeClockAt(epoch)
	tk, err := New(b, store, WithClock(clock), WithUnits(Minute), WithCatchUp(Minute, LatestOnly{}),
		WithLogger(discard), WithTracerProvider(tp))
	require.NoError(t, err)
	require.NoError(t, tk.Start(ctx))
	t.Cleanup(func() { require.NoError(t, tk.Stop(context.Background())) })
	advance(t, clock, 0, tk)
	restart := clock.Now()
	advance(t, clock, time.Minute, tk)
	live := clock.Now()

	type want struct {
		boundary, at time.Time
		catchUp      bool
	}
	wants := map[string]want{}
	for _, w := range []want{{cursor.Add(3 * time.Minute), restart, true}, {cursor.Add(4 * time.Minute), live, false}} {
		wants[timefmt.Format(w.boundary)] = w
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	var emits, skipSpans []tracetest.SpanStub
	traces := map[trace.TraceID]bool{}
	for _, s := range exp.GetSpans() {
		traces[s.SpanContext.TraceID()] = true
		require.False(t, s.Parent.IsValid(), "%s starts a trace", s.Name)
		switch s.Name {
		case "tick.emit minute":
			emits = append(emits, s)
		case "tick.skip minute":
			skipSpans = append(skipSpans, s)
		default:
			t.Fatalf("unexpected span %q", s.Name)
		}
	}
	require.Len(t, traces, 3, "one trace per emission and report")
	require.Len(t, emits, len(wants))
	for _, s := range emits {
		a := telemetrytest.Attrs(s)
		boundary := a[attrBoundary].AsString()
		w, ok := wants[boundary]
		require.True(t, ok, "a span for %s", boundary)
		require.Equal(t, "minute", a[attrUnit].AsString())
		require.Equal(t, w.catchUp, a[attrCatchUp].AsBool(), boundary)
		require.Equal(t, w.at.Sub(w.boundary).Seconds(), a[attrLag].AsFloat64(), boundary)
		require.True(t, s.StartTime.Equal(w.at), "started at the emission, by the ticker's clock: %v", s.StartTime)
		require.Equal(t, codes.Unset, s.Status.Code)
		sc, ok := got.minutes[boundary]
		require.True(t, ok, "the handler got %s", boundary)
		require.True(t, sc.IsValid(), "the handler's ctx has a span")
		require.True(t, sc.Equal(s.SpanContext), "the handler's span context %v is the emission's %v", sc, s.SpanContext)
	}
	require.Len(t, skipSpans, 1)
	a := telemetrytest.Attrs(skipSpans[0])
	require.Equal(t, int64(2), a[attrCount].AsInt64())
	require.Equal(t, timefmt.Format(cursor.Add(time.Minute)), a[attrFrom].AsString())
	require.Equal(t, timefmt.Format(cursor.Add(2*time.Minute)), a[attrTo].AsString())
	require.Equal(t, "latest-only", a[attrPolicy].AsString())
	require.Len(t, got.skips, 1)
	require.True(t, got.skips[0].IsValid())
	require.True(t, got.skips[0].Equal(skipSpans[0].SpanContext))
}

// A failed publish marks its span as an error and records the error; a
// pass whose ctx carries a span (EmitDue inside a traced job) starts its
// emissions' traces linked to it, not in it.
func TestEmissionSpansRecordFailuresAndLinkToTheCaller(t *testing.T) {
	t.Parallel()
	tp, exp := telemetrytest.SpanRecorder(t)
	clock := clockwork.NewFakeClockAt(epoch)
	store := NewMemoryStore()
	ctx := context.Background()
	require.NoError(t, store.Advance(ctx, Minute, time.Time{}, epoch.Add(-90*time.Second), 0))
	rec := &recorder{}
	down := errors.New("receiver down")
	rec.fail = func(any) error { return down }
	tk, err := New(rec, store, WithClock(clock), WithUnits(Minute), WithLogger(discard), WithTracerProvider(tp))
	require.NoError(t, err)

	job, parent := tp.Tracer("job").Start(ctx, "job")
	require.ErrorIs(t, tk.EmitDue(job), down)
	parent.End()
	rec.fail = nil
	require.NoError(t, tk.EmitDue(ctx))

	var emits []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "tick.emit minute" {
			emits = append(emits, s)
		}
	}
	require.Len(t, emits, 2)
	failed, retried := emits[0], emits[1]
	require.Equal(t, codes.Error, failed.Status.Code)
	require.Contains(t, failed.Status.Description, "receiver down")
	require.Len(t, failed.Events, 1, "the error is recorded")
	require.NotEqual(t, parent.SpanContext().TraceID(), failed.SpanContext.TraceID(), "a trace of its own")
	require.Len(t, failed.Links, 1)
	require.True(t, failed.Links[0].SpanContext.Equal(parent.SpanContext()), "linked to the caller's span")
	require.Equal(t, codes.Unset, retried.Status.Code)
	require.Empty(t, retried.Links, "no span in the retry's ctx")
	require.Equal(t, telemetrytest.Attrs(failed)[attrBoundary], telemetrytest.Attrs(retried)[attrBoundary], "the same boundary, retried")
}
