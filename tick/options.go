package tick

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures a Ticker in New. Each option checks its value and New
// returns the first error, wrapping ErrInvalidOption or ErrUnknownUnit.
type Option func(*config) error

type config struct {
	clock    clockwork.Clock
	loc      *time.Location
	units    []Unit
	policies map[Unit]CatchUp
	holder   string
	ttl      time.Duration
	logger   *slog.Logger
	observer Observer
	// meters and tracers are the OpenTelemetry providers; nil for the
	// global ones, read in New.
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	// retry is the first delay before a failed pass is retried; it doubles
	// after each failed pass up to retryMax and is reset by a good one.
	retry, retryMax time.Duration
}

func defaults() config {
	return config{
		clock:    clockwork.NewRealClock(),
		loc:      time.UTC,
		units:    Units(),
		policies: map[Unit]CatchUp{},
		logger:   slog.Default(),
		retry:    time.Second,
		retryMax: time.Minute,
	}
}

// Bounds of the duration options. A duration out of them is refused with
// ErrInvalidOption, naming the option and the value, rather than spinning
// (a lease of a nanosecond is renewed without pause) or wrapping around
// (an expiry past 2262 does not fit the stores' int64 nanoseconds).
const (
	// MaxDuration is the longest duration any option takes: about a
	// century, far beyond any setting anyone means, and short enough that
	// now plus it is still an instant a store can hold.
	MaxDuration = 100 * 365 * 24 * time.Hour
	// MinLeaseTTL is WithLease's shortest ttl. The holder renews the lease
	// every third of it, a store transaction each time, also while a
	// publish runs; below a second the renewals keep the database busy and
	// a garbage-collection pause loses the lease.
	MinLeaseTTL = time.Second
	// MinRetryBackoff is WithRetryBackoff's shortest delay: a failed pass
	// retried sooner hammers the failing store or receiver in a loop.
	MinRetryBackoff = time.Millisecond
)

// checkDuration refuses d outside [lo, MaxDuration], naming what it is.
func checkDuration(what string, d, lo time.Duration, why string) error {
	switch {
	case d <= 0:
		return fmt.Errorf("%w: %s %v must be positive", ErrInvalidOption, what, d)
	case d < lo:
		return fmt.Errorf("%w: %s %v is too short: at least %v (%s)", ErrInvalidOption, what, d, lo, why)
	case d > MaxDuration:
		return fmt.Errorf("%w: %s %v is too long: at most %v (100 years)", ErrInvalidOption, what, d, MaxDuration)
	}
	return nil
}

func (c *config) policy(u Unit) CatchUp {
	if p, ok := c.policies[u]; ok {
		return p
	}
	return DefaultCatchUp
}

// WithClock sets the clock every instant is read from and gocron waits on
// (default: the real clock). Tests pass a *clockwork.FakeClock.
func WithClock(clock clockwork.Clock) Option {
	return func(c *config) error {
		if clock == nil {
			return fmt.Errorf("%w: WithClock: clock must not be nil", ErrInvalidOption)
		}
		c.clock = clock
		return nil
	}
}

// WithLocation sets the zone whose calendar defines the boundaries
// (default: UTC). Events carry their boundaries in this location.
func WithLocation(loc *time.Location) Option {
	return func(c *config) error {
		if loc == nil {
			return fmt.Errorf("%w: WithLocation: location must not be nil", ErrInvalidOption)
		}
		c.loc = loc
		return nil
	}
}

// WithUnits sets the units the ticker publishes (default: all of Units()).
func WithUnits(units ...Unit) Option {
	return func(c *config) error {
		if len(units) == 0 {
			return fmt.Errorf("%w: WithUnits: at least one unit is needed", ErrInvalidOption)
		}
		seen := map[Unit]bool{}
		c.units = c.units[:0:0]
		for _, u := range units {
			if err := checkUnit(u); err != nil {
				return fmt.Errorf("WithUnits: %w", err)
			}
			if !seen[u] {
				seen[u] = true
				c.units = append(c.units, u)
			}
		}
		return nil
	}
}

// WithCatchUp sets the catch-up policy of one unit (default: DefaultCatchUp).
func WithCatchUp(u Unit, policy CatchUp) Option {
	return func(c *config) error {
		if err := checkUnit(u); err != nil {
			return fmt.Errorf("WithCatchUp: %w", err)
		}
		if policy == nil {
			return fmt.Errorf("%w: WithCatchUp(%s): policy must not be nil", ErrInvalidOption, u)
		}
		if err := policy.validate(); err != nil {
			return fmt.Errorf("WithCatchUp(%s): %w", u, err)
		}
		c.policies[u] = policy
		return nil
	}
}

// WithLease makes the ticker one of several replicas sharing its store: it
// emits only while it holds the store's lease, taken as holder for ttl.
// The holder renews it every ttl/3, whether or not a boundary is due, and
// while a pass runs a keeper goroutine renews it every ttl/3 on the
// ticker's clock, during each publish and between them, so a healthy
// holder's lease never lapses however long its publisher takes: a slow
// handler, or hundreds of them in one publish, cost the lease nothing.
// Renewals keep the fencing term, so the pass's own cursor writes are not
// disturbed by them. A standby wakes when the current lease expires and
// takes it over. Stop releases the lease: a restarted or new replica takes
// it at once, a standby at the latest when the released lease would have
// expired. The new fencing term makes any late cursor write of an old
// holder fail.
//
// A holder that cannot renew stops deciding at once: when a renewal fails
// (the store errs or does not answer before the lease's end), finds
// another holder, or comes after the lease ran out (the process stalled
// longer than the ttl: SIGSTOP, a long pause), the context passed to
// Publish is cancelled with a cause wrapping ErrLeaseLost
// (context.Cause), no further event of the pass is published, and the
// pass's cursor write is refused by the fence if another replica took
// over. A publisher should therefore pass ctx on to its handlers and
// return when it is done: what it still posts after that is posted beside
// the new holder. A holder that cannot renew loses the lease even when the
// store failed only once; its next pass takes it again (the same term, if
// no one else took it) after the retry backoff. Health reports a pass
// still running a ttl after its lease was last confirmed, and
// LastLeaseLoss the last lease lost during a pass.
//
// A successor re-publishes what the old holder published since its last
// cursor write, which a pass makes at least every ttl/3 — at most the
// events of the last ttl/3 before the loss, and at most 256 — plus the
// event in flight. Every replica sharing a store must use WithLease with
// its own holder id (NewHolderID makes one); ttl is how long the
// boundaries go without an emitter after a crash, from MinLeaseTTL to
// MaxDuration.
//
// A ticker that only runs EmitDue or EmitUntil, never Start, takes the
// lease too; call Stop when done to release it (see Stop).
func WithLease(holder string, ttl time.Duration) Option {
	return func(c *config) error {
		if holder == "" {
			return fmt.Errorf("%w: WithLease: holder id must not be empty", ErrInvalidOption)
		}
		if err := checkDuration("WithLease: ttl", ttl, MinLeaseTTL, "the lease is renewed every third of it"); err != nil {
			return err
		}
		c.holder, c.ttl = holder, ttl
		return nil
	}
}

// WithRetryBackoff sets how soon a failed pass (a publish or store error)
// is retried when that comes before the next boundary: after initial, then
// twice as long after each further failed pass, at most max; a pass that
// succeeds resets it (default: 1 s doubling up to 1 min). Both lie between
// MinRetryBackoff and MaxDuration, and max is at least initial.
func WithRetryBackoff(initial, max time.Duration) Option {
	return func(c *config) error {
		const why = "a failed pass retried sooner spins"
		if err := checkDuration("WithRetryBackoff: initial delay", initial, MinRetryBackoff, why); err != nil {
			return err
		}
		if err := checkDuration("WithRetryBackoff: max delay", max, MinRetryBackoff, why); err != nil {
			return err
		}
		if max < initial {
			return fmt.Errorf("%w: WithRetryBackoff: max %v is shorter than initial %v", ErrInvalidOption, max, initial)
		}
		c.retry, c.retryMax = initial, max
		return nil
	}
}

// backoff is the delay before retrying after the given number of failed
// passes in a row (at least one).
func (c *config) backoff(failures int) time.Duration {
	d := c.retry
	for i := 1; i < failures && d < c.retryMax; i++ {
		d *= 2
	}
	return min(d, c.retryMax)
}

// WithLogger sets where wake-up errors are reported (default: slog.Default()).
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) error {
		if logger == nil {
			return fmt.Errorf("%w: WithLogger: logger must not be nil", ErrInvalidOption)
		}
		c.logger = logger
		return nil
	}
}

// WithObserver registers callbacks told what the ticker does (see Observer).
func WithObserver(o Observer) Option {
	return func(c *config) error {
		c.observer = o
		return nil
	}
}

// WithMeterProvider sets the OpenTelemetry meter provider the ticker
// records its metrics with (default: the global one,
// otel.GetMeterProvider(), read in New — a global provider installed
// later is used as well, as the API's global delegates, but what is
// recorded before it is installed is lost, so an application installs
// its provider first). Every instrument but one case of the store
// failures has one attribute, "unit":
//
//   - passage.tick.boundaries.emitted (counter, {boundary}): events
//     published, as Observer.Emitted is told;
//   - passage.tick.boundaries.skipped (counter, {boundary}): boundaries
//     a catch-up policy left out, each counted once, when the
//     TicksSkipped reporting them was published (never as emitted);
//   - passage.tick.publish.failures (counter, {failure}): failed publish
//     calls, of a boundary or of a skip report; the boundary is retried;
//   - passage.tick.store.failures (counter, {failure}): failed
//     CursorStore calls, as Observer.StoreFailed is told; reading or
//     writing a unit's cursor is counted with the unit, a call on the
//     lease (take, renew, release), which is no one unit's, without
//     attributes;
//   - passage.tick.emission.lag (histogram, s): from each boundary to its
//     publication, by the ticker's clock: milliseconds when live, as long
//     as the ticker was down for a catch-up.
//
// Each unit's counters are recorded at zero in New, so that their series
// exist before its first boundary passes. With the API's no-op provider,
// or the global one while no SDK is installed, recording costs no
// allocation.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return fmt.Errorf("%w: WithMeterProvider: meter provider must not be nil", ErrInvalidOption)
		}
		c.meters = mp
		return nil
	}
}

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
