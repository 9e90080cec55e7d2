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
