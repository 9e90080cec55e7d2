package telemetry

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// LatenessBuckets are the bounds, in seconds, of the lateness histograms
// of what a to-do list's processor starts — a to-do item's action, a
// schedule's run (its slots are items of one), a workflow's wake-up (as
// well). A Runner acts within a second of the due time, a processor
// driven by MinuteHasPassed within a minute and a little: the bounds are
// fine up to 90 s, so that "within a tick" (≤ 60) reads apart from "a
// tick was missed" (90, 120). A failed item is next started after its
// backoff, one minute to one hour by default, and an item due while the
// process was down waits as long as it was down: minutes to a day.
// Anything later is in the overflow bucket, the sum and the count still
// exact. Callers must not change it.
var LatenessBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 90, 120, 300, 600, 1800, 3600, 7200, 21600, 86400}

// Instruments makes a scope's instruments. An instrument the provider
// refuses is replaced by a no-op one and its error kept for Err:
// telemetry never keeps what records it from starting.
type Instruments struct {
	meter metric.Meter
	errs  []error
}

// NewInstruments returns the instruments maker of the instrumentation
// scope scope with mp.
func NewInstruments(mp metric.MeterProvider, scope string) *Instruments {
	return &Instruments{meter: mp.Meter(scope)}
}

// Meter is the scope's meter, for instruments of other kinds.
func (in *Instruments) Meter() metric.Meter {
	return in.meter
}

// Counter makes the int64 counter name, of unit unit, described by desc.
func (in *Instruments) Counter(name, unit, desc string) metric.Int64Counter {
	c, err := in.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil || c == nil {
		in.Fail(name, err)
		if c == nil {
			c = noop.Int64Counter{}
		}
	}
	return c
}

// Histogram makes the float64 histogram name, of unit unit, described by
// desc, with the bucket bounds bounds.
func (in *Instruments) Histogram(name, unit, desc string, bounds []float64) metric.Float64Histogram {
	h, err := in.meter.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(bounds...))
	if err != nil || h == nil {
		in.Fail(name, err)
		if h == nil {
			h = noop.Float64Histogram{}
		}
	}
	return h
}

// Fail keeps err, the instrument name's, for Err; nil is kept as
// nothing.
func (in *Instruments) Fail(name string, err error) {
	if err != nil {
		in.errs = append(in.errs, fmt.Errorf("instrument %s: %w", name, err))
	}
}

// Err is what the provider refused, nil if nothing: the caller reports
// it to otel.Handle, naming itself.
func (in *Instruments) Err() error {
	return errors.Join(in.errs...)
}

// Attributes are an attribute set as the options each kind of
// measurement takes, made once so that a measurement allocates nothing.
type Attributes struct {
	Add     []metric.AddOption
	Record  []metric.RecordOption
	Observe []metric.ObserveOption
}

// NewAttributes makes the options of the set of kvs.
func NewAttributes(kvs ...attribute.KeyValue) Attributes {
	set := metric.WithAttributeSet(attribute.NewSet(kvs...))
	return Attributes{Add: []metric.AddOption{set}, Record: []metric.RecordOption{set}, Observe: []metric.ObserveOption{set}}
}
