package tick

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
)

// scope is the instrumentation scope of the package's meters and tracers.
const scope = "github.com/passage-of-time/passage/tick"

// The instruments a Ticker records to (see WithMeterProvider). The ticker
// binary exported them under these names from an Observer before the
// package recorded them, so dashboards and alerts written then still read.
const (
	metricEmitted        = "passage.tick.boundaries.emitted"
	metricSkipped        = "passage.tick.boundaries.skipped"
	metricPublishFailure = "passage.tick.publish.failures"
	metricStoreFailure   = "passage.tick.store.failures"
	metricLag            = "passage.tick.emission.lag"
)

// unitAttribute is the metrics' one attribute: a unit of time, of bounded
// cardinality.
const unitAttribute = "unit"

// attrUnit is the spans' attribute naming the unit (tracing.go), made
// once per unit here with the unit's other telemetry.
const attrUnit = "passage.tick.unit"

// lagBuckets are the bounds, in seconds, of the emission lag histogram. A
// live boundary is emitted milliseconds after it passes; a catch-up after
// downtime, minutes to days (a week is the default policy's window).
// Anything later is in the overflow bucket, the sum and the count still
// exact.
var lagBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 24 * 3600, 7 * 24 * 3600}

// instruments are a ticker's metric instruments.
type instruments struct {
	emitted, skipped, publishFailures, storeFailures metric.Int64Counter
	lag                                              metric.Float64Histogram
}

// unitTelemetry is what one unit records with, made once in New so that
// recording and tracing allocate nothing that can be made in advance.
type unitTelemetry struct {
	ptel.Attributes
	// attr is the unit's span attribute, span the name of its emission's
	// span, and skipSpan that of its skip reports'.
	attr           attribute.KeyValue
	span, skipSpan string
}

// telemetry is a ticker's metrics and tracing.
type telemetry struct {
	ins   instruments
	units map[Unit]*unitTelemetry
	// nameless is for what is no one unit's: the lease's store calls.
	nameless []metric.AddOption
	tr       ptel.Tracing
}

// newTelemetry makes the instruments and per-unit options of cfg. An
// instrument the provider refuses is reported to the global error handler
// and replaced by a no-op one: telemetry never keeps a ticker from being
// made.
func newTelemetry(cfg *config) telemetry {
	mp, tp := cfg.meters, cfg.tracers
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	in := ptel.NewInstruments(mp, scope)
	ins := instruments{
		emitted:         in.Counter(metricEmitted, "{boundary}", "Boundaries published."),
		skipped:         in.Counter(metricSkipped, "{boundary}", "Boundaries a catch-up policy did not emit, reported as TicksSkipped."),
		publishFailures: in.Counter(metricPublishFailure, "{failure}", "Failed publish calls, of a boundary or a skip report; the boundary is retried."),
		storeFailures:   in.Counter(metricStoreFailure, "{failure}", "Failed cursor or lease store calls."),
		lag:             in.Histogram(metricLag, "s", "Delay between a boundary and its publication.", lagBuckets),
	}
	if err := in.Err(); err != nil {
		otel.Handle(fmt.Errorf("tick: metrics: %w", err))
	}

	tel := telemetry{ins: ins, units: make(map[Unit]*unitTelemetry, len(cfg.units)), tr: ptel.NewTracing(tp, scope)}
	ctx := context.Background()
	for _, u := range cfg.units {
		ut := &unitTelemetry{
			Attributes: ptel.NewAttributes(attribute.String(unitAttribute, string(u))),
			attr:       attribute.String(attrUnit, string(u)),
			span:       "tick.emit " + string(u),
			skipSpan:   "tick.skip " + string(u),
		}
		tel.units[u] = ut
		for _, c := range []metric.Int64Counter{ins.emitted, ins.skipped, ins.publishFailures, ins.storeFailures} {
			c.Add(ctx, 0, ut.Add...)
		}
	}
	return tel
}

// emitted records a boundary b of u published at at.
func (tel *telemetry) emitted(ctx context.Context, u Unit, b, at time.Time) {
	ut := tel.units[u]
	tel.ins.emitted.Add(ctx, 1, ut.Add...)
	tel.ins.lag.Record(ctx, at.Sub(b).Seconds(), ut.Record...)
}

// skipped records n boundaries of u reported skipped.
func (tel *telemetry) skipped(ctx context.Context, u Unit, n int64) {
	tel.ins.skipped.Add(ctx, n, tel.units[u].Add...)
}

// publishFailed records a failed publish of u's.
func (tel *telemetry) publishFailed(ctx context.Context, u Unit) {
	tel.ins.publishFailures.Add(ctx, 1, tel.units[u].Add...)
}

// storeFailed records a failed store call, of u's or, when u is empty, of
// the lease's.
func (tel *telemetry) storeFailed(ctx context.Context, u Unit) {
	opts := tel.nameless
	if ut, ok := tel.units[u]; ok {
		opts = ut.Add
	}
	tel.ins.storeFailures.Add(ctx, 1, opts...)
}
