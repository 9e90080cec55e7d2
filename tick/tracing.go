package tick

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// The attributes of the spans. Unlike a metric's, a span's may name the
// boundary: a span is one emission's.
const (
	attrUnit     = "passage.tick.unit"
	attrBoundary = "passage.tick.boundary"
	attrCatchUp  = "passage.tick.catch_up"
	attrLag      = "passage.tick.lag"
	attrFrom     = "passage.tick.skipped.from"
	attrTo       = "passage.tick.skipped.to"
	attrCount    = "passage.tick.skipped.count"
	attrPolicy   = "passage.tick.policy"
)

// WithTracerProvider sets the OpenTelemetry tracer provider the ticker
// traces its emissions with (default: the global one,
// otel.GetTracerProvider(), read in New; an SDK installed as the global
// provider later is used as well).
//
// Each event is published in a span of its own, "tick.emit <unit>", and
// each TicksSkipped in a span "tick.skip <unit>": a new trace, linked to
// the span of the ctx the pass was given, if it has one (Start's ctx
// would otherwise make every tick of the process one trace). The span
// starts before the publish and ends after it, both by the ticker's
// clock, and holds the unit, the boundary, whether it is a catch-up and
// the lag (seconds from the boundary to the emission), or, for a skip
// report, the first and last boundary skipped, their count and the
// policy; a failed publish sets its status to Error and records the
// error. The ctx given to Publish carries the span, so that the handlers
// — a to-do list's actions, a schedule's runs — link their own spans to
// the tick that caused them (trace.SpanContextFromContext).
//
// With the API's no-op provider, or the global one while no SDK is
// installed, no span is started, and an emission costs no allocation
// more.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return fmt.Errorf("%w: WithTracerProvider: tracer provider must not be nil", ErrInvalidOption)
		}
		c.tracers = tp
		return nil
	}
}

// startEmit starts the span of publishing u's boundary b, a catch-up or
// not, at at, if spans may record: it returns ctx with the span, or ctx
// and nil.
func (tel *telemetry) startEmit(ctx context.Context, u Unit, b time.Time, catchUp bool, at time.Time) (context.Context, trace.Span) {
	if !tel.tr.On() {
		return ctx, nil
	}
	ut := tel.units[u]
	return tel.tr.Start(ctx, ut.span, at, ut.attr,
		attribute.String(attrBoundary, timefmt.Format(b)),
		attribute.Bool(attrCatchUp, catchUp),
		attribute.Float64(attrLag, at.Sub(b).Seconds()))
}

// startSkip starts the span of publishing the skip report s at at, if
// spans may record.
func (tel *telemetry) startSkip(ctx context.Context, s TicksSkipped, at time.Time) (context.Context, trace.Span) {
	if !tel.tr.On() {
		return ctx, nil
	}
	ut := tel.units[s.Unit]
	return tel.tr.Start(ctx, ut.skipSpan, at, ut.attr,
		attribute.String(attrFrom, timefmt.Format(s.From)),
		attribute.String(attrTo, timefmt.Format(s.To)),
		attribute.Int64(attrCount, s.Count),
		attribute.String(attrPolicy, s.Policy))
}

// endSpan ends span, if any, after a publish that returned err, at the
// clock's now.
func (t *Ticker) endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	ptel.End(span, err, t.cfg.clock.Now())
}
