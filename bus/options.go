package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jonboulle/clockwork"
)

// Option configures a Bus. Options are checked by New, which reports the
// first invalid one.
type Option func(*config) error

type config struct {
	clock      clockwork.Clock
	logger     *slog.Logger
	observer   Observer
	deadLetter func(ctx context.Context, err *HandlerError)
	middleware []Middleware
}

func defaultConfig() config {
	return config{clock: clockwork.NewRealClock(), logger: slog.Default()}
}

// WithClock sets the clock used to measure handler latency for the Observer
// and the Logging middleware, and that Retry and Timeout wait on unless
// given their own. The default is the real clock.
func WithClock(clock clockwork.Clock) Option {
	return func(c *config) error {
		if clock == nil {
			return errors.New("bus: WithClock: clock must not be nil")
		}
		c.clock = clock
		return nil
	}
}

// WithLogger sets the logger that records failures of asynchronous handlers
// when no dead-letter callback is set (they have no caller to return to).
// The default is slog.Default().
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) error {
		if logger == nil {
			return errors.New("bus: WithLogger: logger must not be nil")
		}
		c.logger = logger
		return nil
	}
}

// WithObserver sets the hooks a metrics library uses to count published,
// handled and failed events and to time handlers. Without one, the bus reads
// no clock on the hot path.
func WithObserver(o Observer) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("bus: WithObserver: observer must not be nil")
		}
		c.observer = o
		return nil
	}
}

// WithDeadLetter sets the callback that receives every handler failure that
// is final — after the subscription's middleware, retries included, gave up.
// Synchronous failures are also returned by Publish; asynchronous ones go
// only here (and to the Observer). The callback runs on the goroutine that
// ran the handler and must be safe for concurrent use.
func WithDeadLetter(fn func(ctx context.Context, err *HandlerError)) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("bus: WithDeadLetter: callback must not be nil")
		}
		c.deadLetter = fn
		return nil
	}
}

// WithMiddleware wraps every subscription's handler. Bus middleware is
// outside the subscription's own (see Use), and the first one given is the
// outermost.
func WithMiddleware(mw ...Middleware) Option {
	return func(c *config) error {
		for i, m := range mw {
			if m == nil {
				return fmt.Errorf("bus: WithMiddleware: middleware %d is nil", i)
			}
		}
		c.middleware = append(c.middleware, mw...)
		return nil
	}
}
