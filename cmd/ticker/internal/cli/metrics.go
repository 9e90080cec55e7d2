package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// The figures of /metrics, recorded through the OpenTelemetry metric API
// and exposed by the Prometheus exporter (telemetry.go). The names follow
// the style of the OpenTelemetry semantic conventions — dotted, under the
// package that knows the figure, the unit in the instrument's unit and
// not in its name — and are the names the libraries will record under
// when they take the recording over (tick, schedule, todolist and the
// outbox, with a MeterProvider option): a dashboard or an alert written
// against them now keeps working then. Attributes are bounded: a unit of
// time, a list's name, a sink's name; never an item's ID. The exporter
// turns the dots into underscores and adds _total to counters and the
// unit (_seconds) to the others:
//
//	instrument                          exported as                              attribute
//	passage.tick.boundaries.emitted     passage_tick_boundaries_emitted_total    unit   (recorded by tick)
//	passage.tick.boundaries.skipped     passage_tick_boundaries_skipped_total    unit   (recorded by tick)
//	passage.tick.publish.failures       passage_tick_publish_failures_total      unit   (recorded by tick)
//	passage.tick.emission.lag           passage_tick_emission_lag_seconds        unit   (recorded by tick; histogram: boundary to publication)
//	passage.tick.emission.lag.max       passage_tick_emission_lag_max_seconds    unit
//	passage.tick.store.failures         passage_tick_store_failures_total        unit   (recorded by tick; a lease call's without)
//	passage.schedule.runs.fired         passage_schedule_runs_fired_total               (recorded by schedule; fired and committed by this process)
//	passage.schedule.runs.skipped       passage_schedule_runs_skipped_total             (recorded by schedule; slots reported skipped)
//	passage.schedule.run.lateness       passage_schedule_run_lateness_seconds           (recorded by schedule; histogram: slot's due time to handler)
//	passage.schedule.run.lateness.max   passage_schedule_run_lateness_max_seconds       (slot to firing, a jittered slot's jitter included)
//	passage.delivery.records.delivered  passage_delivery_records_delivered_total sink   (this process's relay)
//	passage.delivery.records.refused    passage_delivery_records_refused_total   sink
//	passage.delivery.records.parked     passage_delivery_records_parked_total    sink
//	passage.delivery.pass.failures      passage_delivery_pass_failures_total     sink
//	passage.delivery.lateness           passage_delivery_lateness_seconds        sink   (histogram: commit to delivery)
//	passage.delivery.lateness.max       passage_delivery_lateness_max_seconds    sink
//	passage.delivery.backlog            passage_delivery_backlog                 sink   (read from the database)
//	passage.delivery.parked             passage_delivery_parked                  sink   (read from the database)
//	passage.postgres.horizon.age        passage_postgres_horizon_age_seconds            (read from the database; PostgreSQL only, horizon.go)
//	passage.todolist.stored.backlog          passage_todolist_stored_backlog                 list   (read from the database, as the rest)
//	passage.todolist.stored.due              passage_todolist_stored_due                     list
//	passage.todolist.stored.parked           passage_todolist_stored_parked                  list
//	passage.todolist.stored.completed        passage_todolist_stored_completed_total         list
//	passage.todolist.stored.failed_attempts  passage_todolist_stored_failed_attempts_total   list
//	passage.todolist.stored.parkings         passage_todolist_stored_parkings_total          list
//
// The to-do list figures are what the database holds, for every process
// (todolist.ReadStats), hence .stored: the todolist package records its
// own, this process's, under passage.todolist.items.* and
// passage.todolist.backlog (todolist.WithMeterProvider), and one meter
// provider must not see one name twice. They were named
// passage.todolist.{backlog,due,parked}, passage.todolist.items.completed,
// passage.todolist.attempts.failed and passage.todolist.items.parked
// before the package recorded its own.
//
// The tick package records its figures itself (tick.WithMeterProvider,
// given the command's provider), so the observer no longer does, or they
// would count twice; it keeps the largest lag, a gauge, since the
// exporter drops a histogram's max.
//
// A histogram is exported as _bucket, _sum and _count series. The
// hand-written exposition this replaces named them passage_ticks_emitted_total,
// passage_ticks_skipped_total, passage_publish_failures_total,
// passage_emission_lag_seconds_{sum,count,max}, passage_store_failures_total,
// passage_schedule_runs_total, passage_schedule_run_lateness_seconds_{sum,count,max},
// passage_delivery_{delivered,refused,parked}_total (now
// passage_delivery_records_…) and passage_todo_{pending,due,parked,
// completed_total,failures_total,parkings_total}.

// Bucket bounds of the lateness histograms, in seconds: a boundary or a
// run is normally late by milliseconds, after downtime by hours or days.
var latenessBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 24 * 3600, 7 * 24 * 3600}

// scrapeTimeout bounds the database reads of one collection: the exporter
// collects without the request's context.
const scrapeTimeout = 5 * time.Second

// metrics is what "ticker run" records of its ticker, its schedule runs
// and its relays: the OpenTelemetry instruments, and the per-unit counts
// and largest delays that the "run --once" line, the dashboard and the
// .max gauges read back.
type metrics struct {
	mu       sync.Mutex
	emitted  map[tick.Unit]int64
	skipped  map[tick.Unit]int64
	failures map[tick.Unit]int64
	lagMax   map[tick.Unit]float64
	// The largest delay from a run's slot to its firing (a jittered slot
	// counts its jitter).
	runLateMax float64

	deliveryLateness metric.Float64Histogram
}

// newMetrics makes the instruments of meter. The schedule package
// records the runs' counter and lateness histogram itself
// (schedule.WithMeterProvider, see openFiring); the largest lateness, a
// gauge, stays here, since the Prometheus exporter drops a histogram's
// max.
func newMetrics(meter metric.Meter) (*metrics, error) {
	m := &metrics{
		emitted: map[tick.Unit]int64{}, skipped: map[tick.Unit]int64{}, failures: map[tick.Unit]int64{},
		lagMax: map[tick.Unit]float64{},
	}
	var errs instrumentErrors
	m.deliveryLateness = errs.histogram(meter, "passage.delivery.lateness", "Delay between a record's commit and its delivery.")
	lagMax := errs.gauge(meter, "passage.tick.emission.lag.max", "s", "Largest delay between a boundary and its publication.")
	runLateMax := errs.gauge(meter, "passage.schedule.run.lateness.max", "s", "Largest delay between a run's slot and its firing.")
	if err := errs.err(); err != nil {
		return nil, err
	}
	if _, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		for u, v := range m.lagMax {
			o.ObserveFloat64(lagMax, v, unitAttr(u))
		}
		o.ObserveFloat64(runLateMax, m.runLateMax)
		return nil
	}, lagMax, runLateMax); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return m, nil
}

// unitAttr is the attribute of a unit's series.
func unitAttr(u tick.Unit) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("unit", string(u)))
}

// ranRun keeps the largest lateness of a committed schedule run; nil-safe
// for commands that keep no metrics.
func (m *metrics) ranRun(r schedule.Run) {
	if m == nil {
		return
	}
	late := max(r.FiredAt.Sub(r.Slot), 0).Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runLateMax = max(m.runLateMax, late)
}

// observer keeps the per-unit counts and largest lags.
func (m *metrics) observer() tick.Observer {
	return tick.Observer{
		Emitted: func(e tick.Event, lag time.Duration) {
			u := e.Unit()
			m.mu.Lock()
			defer m.mu.Unlock()
			m.emitted[u]++
			m.lagMax[u] = max(m.lagMax[u], lag.Seconds())
		},
		Skipped: func(s tick.TicksSkipped) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.skipped[s.Unit] += s.Count
		},
		PublishFailed: func(u tick.Unit, _ time.Time, _ error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.failures[u]++
		},
	}
}

// watchRelays records each relay's deliveries: the lateness of each
// (through the relay's observer) and its counts (read from the relay at
// each collection). It must be called before the relays run.
func (m *metrics) watchRelays(meter metric.Meter, out *delivery) error {
	var errs instrumentErrors
	delivered := errs.observableCounter(meter, "passage.delivery.records.delivered", "{record}", "Records a sink took (this process's relay).")
	refused := errs.observableCounter(meter, "passage.delivery.records.refused", "{delivery}", "Deliveries a sink refused, each retried with backoff or parked (this process's relay).")
	parked := errs.observableCounter(meter, "passage.delivery.records.parked", "{record}", "Records parked after too many refusals (this process's relay).")
	// Named when the relay delivered in passes; with Relay.Run it counts
	// every database operation of the relay that failed (a read of the
	// outbox, a checkpoint), as outbox.Stats.Failed does. The name stays
	// for the dashboards and alerts written against it.
	failed := errs.observableCounter(meter, "passage.delivery.pass.failures", "{operation}", "Relay database operations that failed: reads of the outbox and checkpoints (the name is from when a relay delivered in passes).")
	lateMax := errs.gauge(meter, "passage.delivery.lateness.max", "s", "Largest delay between a record's commit and its delivery.")
	if err := errs.err(); err != nil {
		return err
	}
	for _, rl := range out.relays {
		attr := metric.WithAttributes(attribute.String("sink", rl.name))
		rl.late = func(late time.Duration) { m.deliveryLateness.Record(context.Background(), late.Seconds(), attr) }
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, rl := range out.relays {
			attr := metric.WithAttributes(attribute.String("sink", rl.name))
			s := rl.r.Stats()
			o.ObserveInt64(delivered, s.Delivered, attr)
			o.ObserveInt64(refused, s.Refused, attr)
			o.ObserveInt64(parked, s.Parked, attr)
			o.ObserveInt64(failed, s.Failed, attr)
			rl.mu.Lock()
			o.ObserveFloat64(lateMax, rl.lateMax, attr)
			rl.mu.Unlock()
		}
		return nil
	}, delivered, refused, parked, failed, lateMax)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// watchDatabase registers the figures read from db at each collection,
// with plain SELECTs (readonly.go) that never migrate or take the write
// lock: every to-do list's (the schedules' next slots are the items of
// one), so they count the processors of every process, and, when out has
// relays, each sink's backlog and parked records. A collection whose reads
// fail shows none of them (the SDK reports the error through the
// OpenTelemetry error handler, which logs it). The age of a PostgreSQL
// transaction holding the relays back (out.horizon) is read in a
// collection of its own.
func watchDatabase(meter metric.Meter, db *sqldb.DB, clock clockwork.Clock, out *delivery) error {
	var errs instrumentErrors
	backlog := errs.intGauge(meter, "passage.todolist.stored.backlog", "{item}", "Items waiting on a to-do list (not parked).")
	due := errs.intGauge(meter, "passage.todolist.stored.due", "{item}", "Pending items whose due time has come.")
	parked := errs.intGauge(meter, "passage.todolist.stored.parked", "{item}", "Items parked after too many failed attempts.")
	completed := errs.observableCounter(meter, "passage.todolist.stored.completed", "{item}", "Items processors completed and removed, by every process.")
	failures := errs.observableCounter(meter, "passage.todolist.stored.failed_attempts", "{attempt}", "Failed attempts recorded by processors (version conflicts excluded).")
	parkings := errs.observableCounter(meter, "passage.todolist.stored.parkings", "{item}", "Times an item was parked.")
	sinkBacklog := errs.intGauge(meter, "passage.delivery.backlog", "{record}", "Committed records the sink has yet to take, in the database.")
	sinkParked := errs.intGauge(meter, "passage.delivery.parked", "{record}", "Records parked for the sink, in the database.")
	if err := errs.err(); err != nil {
		return err
	}
	type sinkRow struct {
		name            string
		pending, parked int
	}
	_, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		defer cancel()
		lists, err := todolist.ReadStats(ctx, db, clock.Now())
		if err != nil {
			return fmt.Errorf("/metrics: read the to-do lists: %w", err)
		}
		var sinks []sinkRow
		if out != nil {
			for _, rl := range out.relays {
				p, err := out.box.Parked(ctx, rl.name)
				if err != nil {
					return fmt.Errorf("/metrics: read the parked records of %s: %w", rl.name, err)
				}
				b, err := rl.r.Backlog(ctx)
				if err != nil {
					return fmt.Errorf("/metrics: read the backlog of %s: %w", rl.name, err)
				}
				sinks = append(sinks, sinkRow{rl.name, b.Pending, len(p)})
			}
		}
		for _, l := range lists {
			attr := metric.WithAttributes(attribute.String("list", l.Name))
			o.ObserveInt64(backlog, int64(l.Pending), attr)
			o.ObserveInt64(due, int64(l.Due), attr)
			o.ObserveInt64(parked, int64(l.Parked), attr)
			o.ObserveInt64(completed, int64(l.Completed), attr)
			o.ObserveInt64(failures, int64(l.Failures), attr)
			o.ObserveInt64(parkings, int64(l.Parkings), attr)
		}
		for _, s := range sinks {
			attr := metric.WithAttributes(attribute.String("sink", s.name))
			o.ObserveInt64(sinkBacklog, int64(s.pending), attr)
			o.ObserveInt64(sinkParked, int64(s.parked), attr)
		}
		return nil
	}, backlog, due, parked, completed, failures, parkings, sinkBacklog, sinkParked)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if out != nil {
		return out.horizon.register(meter)
	}
	return nil
}

// instrumentErrors collects the errors of making several instruments, so
// that a list of them reads as a list.
type instrumentErrors []error

func (e *instrumentErrors) add(name string, err error) {
	if err != nil {
		*e = append(*e, fmt.Errorf("metrics: instrument %s: %w", name, err))
	}
}

func (e instrumentErrors) err() error { return errors.Join(e...) }

// histogram makes a histogram of delays in seconds.
func (e *instrumentErrors) histogram(meter metric.Meter, name, desc string) metric.Float64Histogram {
	h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(latenessBuckets...))
	e.add(name, err)
	return h
}

func (e *instrumentErrors) gauge(meter metric.Meter, name, unit, desc string) metric.Float64ObservableGauge {
	g, err := meter.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	e.add(name, err)
	return g
}

func (e *instrumentErrors) intGauge(meter metric.Meter, name, unit, desc string) metric.Int64ObservableGauge {
	g, err := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	e.add(name, err)
	return g
}

func (e *instrumentErrors) observableCounter(meter metric.Meter, name, unit, desc string) metric.Int64ObservableCounter {
	c, err := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	e.add(name, err)
	return c
}

// summary is the line "run --once" prints: what it emitted and where the
// cursors stand, or, on a first run, that it only recorded where they start.
func (m *metrics) summary(before, after map[tick.Unit]time.Time, loc *time.Location) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var emitted, skipped int64
	var perUnit, cursors, started []string
	for _, u := range tick.Units() {
		emitted += m.emitted[u]
		skipped += m.skipped[u]
		if m.emitted[u] > 0 {
			perUnit = append(perUnit, fmt.Sprintf("%s %d", u, m.emitted[u]))
		}
		c, ok := after[u]
		if !ok {
			continue
		}
		cursors = append(cursors, fmt.Sprintf("%s %s", u, timefmt.Format(c.In(loc))))
		if _, had := before[u]; !had {
			started = append(started, string(u))
		}
	}
	noun := "events"
	if emitted == 1 {
		noun = "event"
	}
	line := fmt.Sprintf("once: emitted %d %s", emitted, noun)
	if len(perUnit) > 0 {
		line += " (" + strings.Join(perUnit, ", ") + ")"
	}
	if skipped > 0 {
		line += fmt.Sprintf(", skipped %d boundaries (reported as TicksSkipped)", skipped)
	}
	if len(started) > 0 {
		line += "; first run for " + strings.Join(started, ", ") + ": the cursor starts at the latest boundary and the next run emits what passes after it"
	}
	if len(cursors) > 0 {
		line += "; cursors at " + strings.Join(cursors, ", ")
	}
	return line + "; lease released"
}
