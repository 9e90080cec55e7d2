package schedule

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// The attributes of a run's span. Unlike a metric's, they may name the
// run: a span is one run's.
const (
	attrSchedule     = "passage.schedule.name"
	attrSlot         = "passage.schedule.slot"
	attrSlotID       = "passage.schedule.slot.id"
	attrRunID        = "passage.schedule.run.id"
	attrAttempt      = "passage.schedule.run.attempt"
	attrManual       = "passage.schedule.run.manual"
	attrStillRunning = "passage.schedule.run.still_running"
)

// tracing starts the spans of a scheduler's runs, none without an SDK
// (internal/telemetry tells).
type tracing struct{ ptel.Tracing }

func newTracing(tp trace.TracerProvider) tracing {
	return tracing{ptel.NewTracing(tp, scope)}
}

// startRun starts the span of r's handler at start, if spans may record:
// it returns ctx with the span, or ctx and nil.
func (tr *tracing) startRun(ctx context.Context, r Run, start time.Time) (context.Context, trace.Span) {
	if !tr.On() {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		attribute.String(attrSchedule, r.Schedule),
		attribute.String(attrSlot, timefmt.Format(r.Slot)),
		attribute.String(attrSlotID, r.SlotID),
		attribute.String(attrRunID, r.RunID),
		attribute.Int(attrAttempt, r.Attempt),
	}
	if r.Manual {
		attrs = append(attrs, attribute.Bool(attrManual, true))
	}
	return tr.Start(ctx, "schedule.run "+r.Schedule, start, attrs...)
}

// endRun ends the span of a handler that returned err at end.
func endRun(span trace.Span, err error, end time.Time) {
	switch {
	case err == nil:
	case errors.Is(err, ErrStillRunning):
		span.SetAttributes(attribute.Bool(attrStillRunning, true))
	default:
		ptel.Fail(span, err, end)
	}
	span.End(trace.WithTimestamp(end))
}
