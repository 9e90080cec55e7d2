package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/tick"
)

// Option configures a Scheduler.
type Option func(*options) error

// options are what the Options set, with their defaults (defaults); a
// Scheduler holds them.
type options struct {
	clock     clockwork.Clock
	publisher tick.Publisher
	recordTx  func(ctx context.Context, tx *sqlx.Tx, r SlotsSkipped) error
	live      time.Duration
	// meters and tracers are the OpenTelemetry providers (telemetry.go,
	// tracing.go); nil means the global ones, read by Open.
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	// unnamedMetrics is WithMetricsPerSchedule(false).
	unnamedMetrics bool
}

// defaults are the options of a Scheduler opened without any: the real
// clock, a live window of 2 minutes, no reports, the global
// OpenTelemetry providers, metrics per schedule.
func defaults() options {
	return options{clock: clockwork.NewRealClock(), live: 2 * time.Minute}
}

// The errors of the options, each naming the option and what was wrong.
// They wrap ErrInvalidSpec too, as they always have.
var (
	// ErrWithClockNil is returned when the clock option is given nil.
	ErrWithClockNil = fmt.Errorf("%w: WithClock: clock must not be nil", ErrInvalidSpec)
	// ErrWithSkipsRecordedTxNil is returned when the option recording skip
	// reports in the firing transaction is given nil.
	ErrWithSkipsRecordedTxNil = fmt.Errorf("%w: WithSkipsRecordedTx: function must not be nil", ErrInvalidSpec)
	// ErrWithLiveWindowOutOfRange is returned when the live window option is
	// given a window that is not positive, or longer than the longest
	// interval; the error names the value.
	ErrWithLiveWindowOutOfRange = fmt.Errorf("%w: WithLiveWindow: the window must be positive and at most the longest interval", ErrInvalidSpec)
	// ErrWithMeterProviderNil is returned when the meter provider option
	// is given nil.
	ErrWithMeterProviderNil = fmt.Errorf("%w: WithMeterProvider: meter provider must not be nil", ErrInvalidSpec)
	// ErrWithTracerProviderNil is returned when the tracer provider option
	// is given nil.
	ErrWithTracerProviderNil = fmt.Errorf("%w: WithTracerProvider: tracer provider must not be nil", ErrInvalidSpec)
)

// WithClock sets the clock the scheduler plans by; the default is the
// real one.
func WithClock(c clockwork.Clock) Option {
	return func(s *options) error {
		if c == nil {
			return ErrWithClockNil
		}
		s.clock = c
		return nil
	}
}

// WithSkipsRecordedTx hands every SlotsSkipped to record inside the
// transaction that counted it, before it commits: for an outbox, so that
// a report is delivered if and only if the firing that decided it
// commits (WithPublisher publishes after the commit, and loses a report
// when the process ends in between). An error from record fails the
// batch: its slots are retried, and nothing of it is stored.
func WithSkipsRecordedTx(record func(ctx context.Context, tx *sqlx.Tx, r SlotsSkipped) error) Option {
	return func(s *options) error {
		if record == nil {
			return ErrWithSkipsRecordedTxNil
		}
		s.recordTx = record
		return nil
	}
}

// WithPublisher publishes a SlotsSkipped for every skip (the bus's
// Publish fits).
func WithPublisher(p tick.Publisher) Option {
	return func(s *options) error {
		s.publisher = p
		return nil
	}
}

// WithLiveWindow sets how late a slot may be fired and still count as on
// time for tick.Skip (default 2 minutes: a minute's tick, and its
// processing).
func WithLiveWindow(d time.Duration) Option {
	return func(s *options) error {
		if d <= 0 || d > MaxInterval {
			return fmt.Errorf("%w (%v), got %v", ErrWithLiveWindowOutOfRange, MaxInterval, d)
		}
		s.live = d
		return nil
	}
}

// WithMeterProvider sets the OpenTelemetry meter provider the scheduler
// records its metrics with (default: the global one,
// otel.GetMeterProvider(), read by Open — a global SDK installed later is
// used as well, as the API's global delegates). Its to-do list of next
// slots records the todolist's metrics with it too (list
// "passage-schedules"). The instruments:
//
//   - passage.schedule.runs.fired (counter, {run}): runs this process
//     fired and committed — the plan's, and those of Trigger and
//     Backfill; a run whose transaction rolled back (its handler, or
//     another slot of its batch, failed) is not counted, its retry is;
//   - passage.schedule.runs.skipped (counter, {slot}): slots reported
//     skipped (SlotsSkipped, the overlap policy's included) by firings
//     this process committed, each slot once: a report of 4 slots counts
//     4;
//   - passage.schedule.run.lateness (histogram, s): from the instant a
//     planned slot fell due — the slot plus its jitter offset, when the
//     schedule has Jitter, so that jitter chosen on purpose is not read
//     as lateness — to the start of its handler, for each run committed;
//     a retried run is late by its backoffs as well. Trigger's and
//     Backfill's runs are not planned, and not measured.
//
// Each has the attribute schedule=<name>, unless WithMetricsPerSchedule
// (false). The counters count what this process did; a schedule's totals
// over every process are in its row (Scheduler.List: Runs, Skipped).
// With the API's no-op provider, or the global one while no SDK is
// installed, recording costs no allocation.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) error {
		if mp == nil {
			return ErrWithMeterProviderNil
		}
		o.meters = mp
		return nil
	}
}

// WithMetricsPerSchedule says whether the metrics carry the schedule's
// name (the default) or not: without it, every schedule's runs, skips and
// lateness add up in one series per instrument.
//
// A name costs a series per counter and, for the lateness histogram, a
// series per bucket and two more (sum, count): 23 series a schedule,
// held by the SDK and by whatever stores them, for as long as the process
// runs. A few hundred schedules are cheap; with tens of thousands
// (100,000 schedules are 2.3 million series), turn it off, and find the
// late or skipping schedule from its row (Scheduler.List, the dashboard)
// once the totals say that one is.
func WithMetricsPerSchedule(on bool) Option {
	return func(o *options) error {
		o.unnamedMetrics = !on
		return nil
	}
}

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
