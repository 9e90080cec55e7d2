package todolist

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/jmoiron/sqlx"
	ptel "github.com/passage-of-time/passage/internal/telemetry"
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

// newInstruments makes the instruments of the list named list, on db, with
// mp. An instrument the provider refuses is reported to the global error
// handler and replaced by a no-op one: telemetry never keeps a list from
// opening.
func newInstruments(mp metric.MeterProvider, db *sqlx.DB, list string) instruments {
	in := ptel.NewInstruments(mp, scope)
	set := ptel.NewAttributes(attribute.String(listAttribute, list))
	ins := instruments{
		added:     in.Counter(metricAdded, "{item}", "Items added to a to-do list by this process."),
		completed: in.Counter(metricCompleted, "{item}", "To-do items whose action returned nil, in this process."),
		failed:    in.Counter(metricFailed, "{item}", "Failed attempts at to-do items recorded by this process, the one that parked an item included."),
		parked:    in.Counter(metricParked, "{item}", "To-do items parked by this process after their last allowed attempt."),
		lateness: in.Histogram(metricLateness, "s", "From a to-do item's due time to the start of its action.",
			ptel.LatenessBuckets),
		add:     set.Add,
		record:  set.Record,
		observe: set.Observe,
	}
	meter := in.Meter()
	backlog, err := meter.Int64ObservableGauge(metricBacklog, metric.WithUnit("{item}"),
		metric.WithDescription("Pending to-do items (not parked, due or not), read from the database at each collection."))
	if err == nil && backlog != nil {
		err = watchBacklog(meter, backlog, db, list, ins.observe)
	}
	in.Fail(metricBacklog, err)
	if err := in.Err(); err != nil {
		otel.Handle(fmt.Errorf("todolist: metrics of %q: %w", list, err))
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
