package orchestration

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/eventstore"
	ptel "github.com/passage-of-time/passage/internal/telemetry"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// The attributes of the spans. Unlike a metric's, they may name the
// instance: a span is one instance's.
const (
	attrWorkflow = "passage.workflow.name"
	attrInstance = "passage.workflow.instance"
	attrExisting = "passage.workflow.existing"
	attrDue      = "passage.workflow.wakeup.due"
	attrLateness = "passage.workflow.wakeup.lateness"
	attrOutcome  = "passage.workflow.outcome"
	attrWakeAt   = "passage.workflow.wake_at"
	attrConflict = "passage.workflow.conflict"
	attrStep     = "passage.workflow.step"
	attrAttempt  = "passage.workflow.step.attempt"
	attrKey      = "passage.workflow.step.key"
)

// traceContext is how an instance's trace context is written into its
// history and read back: W3C Trace Context (traceparent, tracestate).
var traceContext propagation.TraceContext

// tracing starts the spans of an engine's instances, none without an
// SDK (internal/telemetry tells). Its zero value starts none.
type tracing struct{ ptel.Tracing }

func newTracing(tp trace.TracerProvider) tracing {
	return tracing{ptel.NewTracing(tp, scope)}
}

// startInstance starts the span of Start for an instance of wf at start,
// if spans may record, and returns it with its context as a W3C trace
// context carrier, for the history; nil and nil otherwise.
func (tr *tracing) startInstance(ctx context.Context, wf *registered, instance string, start time.Time) (trace.Span, map[string]string) {
	if !tr.On() {
		return nil, nil
	}
	ctx, span := tr.Start(ctx, wf.startName, start, attribute.String(attrWorkflow, wf.name), attribute.String(attrInstance, instance))
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	return span, carrier
}

// endInstance ends the span of a Start that returned err at end; existing
// reports that the instance existed already (and the context recorded
// is that of its own first Start).
func endInstance(span trace.Span, err error, existing bool, end time.Time) {
	if span == nil {
		return
	}
	if existing {
		span.SetAttributes(attribute.Bool(attrExisting, true))
	} else if err != nil {
		ptel.Fail(span, err, end)
	}
	span.End(trace.WithTimestamp(end))
}

// recordedTrace returns the trace context recorded in an instance's
// history, invalid when there is none.
func recordedTrace(history []eventstore.Recorded) trace.SpanContext {
	if len(history) == 0 {
		return trace.SpanContext{}
	}
	started, _ := history[0].Event.(workflowStarted)
	return started.traced()
}

// traced returns the trace context recorded at the start, invalid when
// there is none.
func (e workflowStarted) traced() trace.SpanContext {
	if len(e.Trace) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.MapCarrier(e.Trace)))
}

// startWakeup starts the span of an execution of x, woken for a wake-up
// due at due, at start, if spans may record: it returns ctx with the
// span, or ctx and nil. The span is a child of the context recorded in
// the history, when there is one, and linked to the span of ctx.
func (tr *tracing) startWakeup(ctx context.Context, x *execution, due, start time.Time) (context.Context, trace.Span) {
	if !tr.On() || x.wf == nil {
		return ctx, nil
	}
	opts := ptel.LinkedTo(ctx, trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String(attrWorkflow, x.wf.name),
		attribute.String(attrInstance, x.instance),
		attribute.String(attrDue, timefmt.Format(due)),
		attribute.Float64(attrLateness, start.Sub(due).Seconds())))
	parent := ctx
	if sc := recordedTrace(x.history); sc.IsValid() {
		parent = trace.ContextWithRemoteSpanContext(ctx, sc)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return tr.Tracer().Start(parent, x.wf.wakeName, opts...)
}

// endWakeup ends the span of an execution of x at end: err is how its
// write (or the execution itself) failed, conflict that another
// execution's write won.
func endWakeup(x *execution, err error, conflict bool, end time.Time) {
	span := x.span
	if span == nil {
		return
	}
	x.span = nil
	switch {
	case err != nil:
		ptel.Fail(span, err, end)
	case conflict:
		span.SetAttributes(attribute.Bool(attrConflict, true))
	default:
		outcome, failure := x.outcome()
		span.SetAttributes(attribute.String(attrOutcome, outcome))
		if outcome == "suspended" {
			span.SetAttributes(attribute.String(attrWakeAt, timefmt.Format(x.wakeAt)))
		}
		if failure != "" {
			span.SetStatus(codes.Error, failure)
		}
	}
	span.End(trace.WithTimestamp(end))
}

// outcome says how an execution whose write committed left its instance,
// and the error of a failed or stuck one.
func (x *execution) outcome() (string, string) {
	for _, ev := range x.pending {
		switch ev := ev.(type) {
		case workflowCompleted:
			return string(Completed), ""
		case workflowFailed:
			return string(Failed), ev.Error
		case workflowCancelled:
			return string(Cancelled), ""
		case workflowStuck:
			return string(Stuck), ev.Error
		}
	}
	if x.suspended {
		return "suspended", ""
	}
	return string(Running), ""
}
