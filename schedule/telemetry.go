package schedule

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
	"github.com/passage-of-time/passage/todolist"
)

// scope is the instrumentation scope of the package's meters and tracers.
const scope = "github.com/passage-of-time/passage/schedule"

// The instruments a Scheduler records to (see [WithMeterProvider]).
const (
	metricFired    = "passage.schedule.runs.fired"
	metricSkipped  = "passage.schedule.runs.skipped"
	metricLateness = "passage.schedule.run.lateness"
)

// scheduleAttribute is the one attribute of the metrics, unless
// WithMetricsPerSchedule(false): the schedule's name, bounded by the
// number of schedules (a run's or a slot's id never is one).
const scheduleAttribute = "schedule"

// instruments are a scheduler's metric instruments, and the options each
// schedule's measurements take, made once per name and kept.
type instruments struct {
	fired, skipped metric.Int64Counter
	lateness       metric.Float64Histogram
	// perSchedule is false for WithMetricsPerSchedule(false): every
	// measurement then takes no attribute.
	perSchedule bool

	mu   sync.Mutex
	sets map[string]ptel.Attributes // by schedule name
}

// newInstruments makes the instruments with mp. An instrument the
// provider refuses is reported to the global error handler and replaced
// by a no-op one: telemetry never keeps a scheduler from opening.
func newInstruments(mp metric.MeterProvider, perSchedule bool) *instruments {
	in := ptel.NewInstruments(mp, scope)
	// The lateness buckets are the to-do lists': a slot is fired by a
	// processor, as an item of one.
	ins := &instruments{
		fired:   in.Counter(metricFired, "{run}", "Schedule runs this process fired and committed (planned, triggered and backfilled)."),
		skipped: in.Counter(metricSkipped, "{slot}", "Slots a catch-up or overlap policy did not fire, reported by firings this process committed, each slot once."),
		lateness: in.Histogram(metricLateness, "s",
			"From the instant a planned slot fell due (the slot plus its jitter offset) to the start of its run's handler, for each run committed.",
			ptel.LatenessBuckets),
		perSchedule: perSchedule,
		sets:        map[string]ptel.Attributes{},
	}
	if err := in.Err(); err != nil {
		otel.Handle(fmt.Errorf("schedule: metrics: %w", err))
	}
	return ins
}

// on reports whether any instrument records: false with the no-op
// provider and with the global one while no SDK is installed, so that
// nothing is gathered for them.
func (ins *instruments) on(ctx context.Context) bool {
	return ins.fired.Enabled(ctx) || ins.skipped.Enabled(ctx) || ins.lateness.Enabled(ctx)
}

// of returns the measurement options of the named schedule's series,
// making them on its first measurement; none without per-schedule
// metrics.
func (ins *instruments) of(name string) ptel.Attributes {
	if !ins.perSchedule {
		return ptel.Attributes{}
	}
	ins.mu.Lock()
	defer ins.mu.Unlock()
	m, ok := ins.sets[name]
	if !ok {
		m = ptel.NewAttributes(attribute.String(scheduleAttribute, name))
		ins.sets[name] = m
	}
	return m
}

// forget drops a deleted schedule's measurement options. Its series stay
// in the SDK (a cumulative counter is never taken back); a schedule
// added again under the name makes them again.
func (ins *instruments) forget(name string) {
	ins.mu.Lock()
	defer ins.mu.Unlock()
	delete(ins.sets, name)
}

// ran counts a run that committed outside the processor (Trigger,
// Backfill): not planned, so not measured for lateness.
func (ins *instruments) ran(ctx context.Context, name string) {
	if ins.fired.Enabled(ctx) {
		ins.fired.Add(ctx, 1, ins.of(name).Add...)
	}
}

// measured is a planned run of a batch, as its metrics need it.
type measured struct {
	schedule string
	late     float64 // seconds, from the slot's due time to the handler's start
}

// batch records the metrics of a batch's planned runs and its reports
// once the batch's transaction commits (todolist.AfterCommit): what
// rolls back was not fired.
func (ins *instruments) batch(ctx context.Context, runs []measured, reports []SlotsSkipped) {
	record := func(ctx context.Context) {
		for _, r := range runs {
			m := ins.of(r.schedule)
			ins.fired.Add(ctx, 1, m.Add...)
			ins.lateness.Record(ctx, r.late, m.Record...)
		}
		for _, r := range reports {
			ins.skipped.Add(ctx, r.Count, ins.of(r.Schedule).Add...)
		}
	}
	if !todolist.AfterCommit(ctx, record) {
		// fireBatch is a processor's action, whose ctx always takes it;
		// were it not, counting before the commit beats counting nothing.
		record(ctx)
	}
}
