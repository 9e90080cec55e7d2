package todolist

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// scope is the instrumentation scope of the package's meters and tracers.
const scope = "github.com/passage-of-time/passage/todolist"

// The instruments a list records to (see [WithMeterProvider]). Counters
// count in this process; the totals of every process are in the database
// ([Stats]).
const (
	metricAdded     = "passage.todolist.items.added"
	metricCompleted = "passage.todolist.items.completed"
	metricFailed    = "passage.todolist.items.failed"
	metricParked    = "passage.todolist.items.parked"
	metricLateness  = "passage.todolist.action.lateness"
	metricBacklog   = "passage.todolist.backlog"
)

// listAttribute is the one attribute of the metrics: the list's name, of
// bounded cardinality (an item's ID never is). It is the label the
// ticker's /metrics has always named lists by.
const listAttribute = "list"

// latenessBuckets are the bounds, in seconds, of the lateness histogram.
// A Runner acts within a second of the due time, a processor driven by
// MinuteHasPassed within a minute and a little: the bounds are fine up
// to 90 s, so that "within a tick" (≤ 60) reads apart from "a tick was
// missed" (90, 120). A failed item is next started after its backoff,
// one minute to one hour by default (DefaultBackoffBase and
// DefaultBackoffMax), and an item due while the process was down waits
// as long as it was down: minutes to a day. Anything later is in the
// overflow bucket, the sum and the count still exact.
var latenessBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 90, 120, 300, 600, 1800, 3600, 7200, 21600, 86400}

// WithMeterProvider sets the OpenTelemetry meter provider the list and
// its processors record their metrics with (default: the global one,
// otel.GetMeterProvider(), read when the list is opened — a global
// provider installed later is used as well, as the API's global
// delegates). Every instrument has one attribute, "list", the list's
// name:
//
//   - passage.todolist.items.added (counter, {item}): the items of Add,
//     AddTx, AddMany and AddManyTx calls that succeeded (an ID given
//     twice to one AddMany counts once), whether or not a call changed
//     the item (an Add is idempotent); a Tx form counts when its
//     statement succeeds, before the caller's transaction commits;
//   - passage.todolist.items.completed (counter, {item}): actions that
//     returned nil, as [Observer].Done is told ([Result].Done);
//   - passage.todolist.items.failed (counter, {item}): failed attempts
//     recorded, the one that parks an item included ([Result].Failed
//     plus [Result].Parked); version conflicts are not failures;
//   - passage.todolist.items.parked (counter, {item}): items parked, once
//     each time one is;
//   - passage.todolist.action.lateness (histogram, s): from an item's due
//     time to the start of its action (of its batch's action, for a
//     batch), each time one starts; a retried item is late by its
//     backoff as well;
//   - passage.todolist.backlog (gauge, {item}): the list's pending items
//     (not parked, due or not, as [Stats].Pending), read from the
//     database when the metrics are collected, never while items are
//     worked: one query on the index of unparked items for every list
//     opened on the database with the provider (a list opened again
//     adds nothing).
//
// The counters count what this process did; the totals of every process
// are kept in the database ([Stats]). With the API's no-op provider, or
// the global one while no SDK is installed, recording costs no
// allocation.
func WithMeterProvider(mp metric.MeterProvider) ListOption {
	return func(l *List) error {
		if mp == nil {
			return invalid("WithMeterProvider", "the meter provider must not be nil")
		}
		l.meters = mp
		return nil
	}
}

// instruments are a list's metric instruments, with the list's attribute
// set made once into the options each measurement takes, so that
// recording allocates nothing.
type instruments struct {
	added, completed, failed, parked metric.Int64Counter
	lateness                         metric.Float64Histogram
	add                              []metric.AddOption
	record                           []metric.RecordOption
	observe                          []metric.ObserveOption
}

// newInstruments makes the instruments of list l with mp. An instrument
// the provider refuses is reported to the global error handler and
// replaced by a no-op one: telemetry never keeps a list from opening.
func newInstruments(mp metric.MeterProvider, l *List) instruments {
	meter := mp.Meter(scope)
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String(listAttribute, l.name)))
	ins := instruments{
		add:     []metric.AddOption{set},
		record:  []metric.RecordOption{set},
		observe: []metric.ObserveOption{set},
	}
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit("{item}"), metric.WithDescription(desc))
		if err != nil || c == nil {
			errs = append(errs, err)
			if c == nil {
				c = noop.Int64Counter{}
			}
		}
		return c
	}
	ins.added = counter(metricAdded, "Items added to a to-do list by this process.")
	ins.completed = counter(metricCompleted, "To-do items whose action returned nil, in this process.")
	ins.failed = counter(metricFailed, "Failed attempts at to-do items recorded by this process, the one that parked an item included.")
	ins.parked = counter(metricParked, "To-do items parked by this process after their last allowed attempt.")
	var err error
	ins.lateness, err = meter.Float64Histogram(metricLateness, metric.WithUnit("s"),
		metric.WithDescription("From a to-do item's due time to the start of its action."),
		metric.WithExplicitBucketBoundaries(latenessBuckets...))
	if err != nil || ins.lateness == nil {
		errs = append(errs, err)
		if ins.lateness == nil {
			ins.lateness = noop.Float64Histogram{}
		}
	}
	backlog, err := meter.Int64ObservableGauge(metricBacklog, metric.WithUnit("{item}"),
		metric.WithDescription("Pending to-do items (not parked, due or not), read from the database at each collection."))
	if err == nil && backlog != nil {
		err = watchBacklog(meter, backlog, l.db, l.name, ins.observe)
	}
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		otel.Handle(fmt.Errorf("todolist: metrics of %q: %w", l.name, err))
	}
	return ins
}

// late records the lateness of an item due at due whose action starts at
// start.
func (ins *instruments) late(ctx context.Context, due, start time.Time) {
	ins.lateness.Record(ctx, start.Sub(due).Seconds(), ins.record...)
}

// lateBatch records the lateness of each item of a batch whose action
// starts at start.
func (p *Processor) lateBatch(ctx context.Context, batch []claimed, start time.Time) {
	for _, it := range batch {
		p.list.ins.late(ctx, it.Due, start)
	}
}
