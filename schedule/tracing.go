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

// WithTracerProvider sets the OpenTelemetry tracer provider the scheduler
// traces its runs with (default: the global one, otel.GetTracerProvider(),
// read by Open; an SDK installed as the global provider later is used as
// well). Its to-do list of next slots traces its batches with it too
// ("todolist.batch passage-schedules").
//
// Each run's handler runs in a span of its own, "schedule.run <name>": a
// new trace, linked to the span of the ctx the firing was given — the
// to-do list's batch span that fired it, itself linked to the tick's
// when the processor's ctx carries one (the tick's at once, should the
// list not trace). The span starts and ends with the handler and
// holds the schedule's name, the slot, the slot id, the run id and the
// attempt (and, for Trigger's runs, manual); a handler error or panic
// sets its status to Error and records the error, and ErrStillRunning is
// marked as still_running, not as an error. The handler's ctx carries the
// span, so what it traces is its child. A run whose transaction rolls
// back after its handler returned (another slot of its batch failed) has
// a span all the same, and a second one when it is fired again.
//
// With the API's no-op provider, or the global one while no SDK is
// installed, no span is started, and a run costs no allocation more.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return ErrWithTracerProviderNil
		}
		o.tracers = tp
		return nil
	}
}

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
