package tick

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
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
}

func defaults() config {
	return config{
		clock:    clockwork.NewRealClock(),
		loc:      time.UTC,
		units:    Units(),
		policies: map[Unit]CatchUp{},
		logger:   slog.Default(),
	}
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
// emits only while it holds the store's lease, taken as holder for ttl and
// renewed at every wake-up. A holder that dies stops renewing, and another
// replica takes over at its first wake-up after the lease expires; the new
// fencing term makes any late cursor write of the old holder fail. Every
// replica sharing a store must use WithLease with its own holder id; the
// ttl must exceed the longest gap between wake-ups you accept to go
// without an emitter after a crash.
func WithLease(holder string, ttl time.Duration) Option {
	return func(c *config) error {
		if holder == "" {
			return fmt.Errorf("%w: WithLease: holder id must not be empty", ErrInvalidOption)
		}
		if ttl <= 0 {
			return fmt.Errorf("%w: WithLease: ttl must be positive, got %v", ErrInvalidOption, ttl)
		}
		c.holder, c.ttl = holder, ttl
		return nil
	}
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

// WithObserver registers callbacks for metrics (see Observer).
func WithObserver(o Observer) Option {
	return func(c *config) error {
		c.observer = o
		return nil
	}
}
