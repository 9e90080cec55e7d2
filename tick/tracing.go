package tick

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// The attributes of the spans. Unlike a metric's, a span's may name the
// boundary: a span is one emission's.
const (
	attrBoundary = "passage.tick.boundary"
	attrCatchUp  = "passage.tick.catch_up"
	attrLag      = "passage.tick.lag"
	attrFrom     = "passage.tick.skipped.from"
	attrTo       = "passage.tick.skipped.to"
	attrCount    = "passage.tick.skipped.count"
	attrPolicy   = "passage.tick.policy"
)

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
