package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
)

// Handler is a handler with its event type erased, as middleware sees it.
// The event is the published value; assert it to its type when needed.
type Handler func(ctx context.Context, event any) error

// Middleware wraps a Handler to add behaviour around every call: retries,
// timeouts, logging, tracing. Middleware given first is outermost: with
// Use(A, B), a call runs A, then B, then the handler. Bus-wide middleware
// (WithMiddleware) is outside the subscription's own. A handler's panic has
// already become a *PanicError when middleware sees it.
type Middleware func(next Handler) Handler

type handlerKey struct{}

// HandlerName returns the name of the subscription whose handler is running,
// for middleware to log or label metrics with. It is empty outside a
// middleware chain.
func HandlerName(ctx context.Context) string {
	if s, ok := ctx.Value(handlerKey{}).(*subscription); ok {
		return s.name
	}
	return ""
}

// clockFrom returns the clock of the bus whose handler is running, or the
// real clock outside a middleware chain.
func clockFrom(ctx context.Context) clockwork.Clock {
	if s, ok := ctx.Value(handlerKey{}).(*subscription); ok {
		return s.bus.cfg.clock
	}
	return clockwork.NewRealClock()
}

// buildChain wraps h in mws, the first outermost, and tags the context with
// the subscription so middleware can name it.
func buildChain(s *subscription, mws []Middleware, h Handler) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return func(ctx context.Context, event any) error {
		return h(context.WithValue(ctx, handlerKey{}, s), event)
	}
}

// RetryPolicy configures Retry. Zero fields take the defaults given.
type RetryPolicy struct {
	// MaxAttempts is how many times the handler runs at most, the first
	// attempt included. Default 3.
	MaxAttempts int
	// InitialBackoff is the wait before the second attempt. Default 100ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the wait between attempts. Default 10s.
	MaxBackoff time.Duration
	// Multiplier grows the wait after each attempt. Default 2.
	Multiplier float64
	// Retryable reports whether an error is worth another attempt. Default:
	// every error except a panic and the handler's context having ended;
	// an attempt cut short by an inner Timeout (ErrTimeout) is retried.
	Retryable func(err error) bool
	// Clock times the backoff. Default: the bus's clock (see WithClock),
	// or the real clock when the middleware runs outside a bus.
	Clock clockwork.Clock
}

// Retry runs the handler again while it fails with a retryable error, up to
// MaxAttempts times, waiting InitialBackoff, then Multiplier times longer
// each time up to MaxBackoff. The wait ends early, with the last error and
// the context's, when the context ends. The final error says how many
// attempts were made and wraps the last one.
//
// To bound each attempt rather than all of them, put Timeout after Retry:
// Use(retry, timeout).
func Retry(p RetryPolicy) (Middleware, error) {
	switch {
	case p.MaxAttempts < 0:
		return nil, fmt.Errorf("bus: Retry: MaxAttempts must not be negative, got %d", p.MaxAttempts)
	case p.InitialBackoff < 0:
		return nil, fmt.Errorf("bus: Retry: InitialBackoff must not be negative, got %s", p.InitialBackoff)
	case p.MaxBackoff < 0:
		return nil, fmt.Errorf("bus: Retry: MaxBackoff must not be negative, got %s", p.MaxBackoff)
	case p.Multiplier != 0 && p.Multiplier < 1:
		return nil, fmt.Errorf("bus: Retry: Multiplier must be at least 1, got %g", p.Multiplier)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 3
	}
	if p.InitialBackoff == 0 {
		p.InitialBackoff = 100 * time.Millisecond
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = 10 * time.Second
	}
	if p.Multiplier == 0 {
		p.Multiplier = 2
	}
	if p.Retryable == nil {
		p.Retryable = defaultRetryable
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, event any) error {
			clock := p.Clock
			if clock == nil {
				clock = clockFrom(ctx)
			}
			backoff := min(p.InitialBackoff, p.MaxBackoff)
			for attempt := 1; ; attempt++ {
				err := next(ctx, event)
				if err == nil {
					return nil
				}
				if attempt == p.MaxAttempts || !p.Retryable(err) {
					return fmt.Errorf("after %d attempt(s): %w", attempt, err)
				}
				timer := clock.NewTimer(backoff)
				select {
				case <-timer.Chan():
				case <-ctx.Done():
					timer.Stop()
					return fmt.Errorf("retry stopped after %d attempt(s): %w", attempt, errors.Join(ctx.Err(), err))
				}
				backoff = nextBackoff(backoff, p.Multiplier, p.MaxBackoff)
			}
		}
	}, nil
}

// nextBackoff grows backoff by multiplier up to limit. The product is
// compared in float64, where it cannot overflow: a Duration holds under 300
// years, which doubling a second reaches in 34 attempts, and past that the
// conversion back would wrap to a negative wait.
func nextBackoff(backoff time.Duration, multiplier float64, limit time.Duration) time.Duration {
	next := float64(backoff) * multiplier
	if next >= float64(limit) {
		return limit
	}
	return time.Duration(next)
}

// ended reports whether ctx is done without calling Err, which blocks on a
// live clockwork fake-clock context.
func ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// defaultRetryable retries every error but a panic (a bug, which would only
// panic again) and the context having ended. The one ended context it does
// retry is an attempt's own, ended by an inner Timeout: Timeout reports
// ErrTimeout only while the context Retry waits on is still live.
func defaultRetryable(err error) bool {
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		return false
	case errors.Is(err, ErrTimeout):
		return true
	default:
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
}

// Timeout gives each handler call a context that ends after d, measured by
// clock; nil means the bus's clock (see WithClock), or the real clock when
// the middleware runs outside a bus. Handlers must honour their context: Go
// cannot stop a goroutine, and abandoning the call would break per-key
// order.
//
// A call that fails after its deadline passed fails with an error wrapping
// both ErrTimeout and the handler's own error; one that succeeds anyway
// succeeds. When the caller's context ended first, the error is left as the
// handler returned it: the timeout did not cut the call short.
func Timeout(d time.Duration, clock clockwork.Clock) (Middleware, error) {
	if d <= 0 {
		return nil, fmt.Errorf("bus: Timeout: duration must be positive, got %s", d)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, event any) error {
			c := clock
			if c == nil {
				c = clockFrom(ctx)
			}
			tctx, cancel := clockwork.WithTimeout(ctx, c, d)
			defer cancel()
			err := next(tctx, event)
			if err != nil && ended(tctx) && !ended(ctx) {
				return fmt.Errorf("%w after %s: %w", ErrTimeout, d, err)
			}
			return err
		}
	}, nil
}

// Logging logs each handler call to logger (nil means slog.Default()): a
// failure at Error level with the error (and the stack, for a panic), a
// success at Debug level. Both carry the handler's name, the event's type
// and how long the call took by the bus's clock.
func Logging(logger *slog.Logger) Middleware {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, event any) error {
			clock := clockFrom(ctx)
			start := clock.Now()
			err := next(ctx, event)
			attrs := []slog.Attr{
				slog.String("handler", HandlerName(ctx)),
				slog.String("event", fmt.Sprintf("%T", event)),
				slog.Duration("duration", clock.Since(start)),
			}
			if err == nil {
				logger.LogAttrs(ctx, slog.LevelDebug, "bus: handled", attrs...)
				return nil
			}
			logger.LogAttrs(ctx, slog.LevelError, "bus: handler failed", append(attrs, errorAttrs(err)...)...)
			return err
		}
	}
}

// errorAttrs describes err for a log record, with the stack of a panic.
func errorAttrs(err error) []slog.Attr {
	attrs := []slog.Attr{slog.Any("error", err)}
	var pe *PanicError
	if errors.As(err, &pe) {
		attrs = append(attrs, slog.String("stack", string(pe.Stack)))
	}
	return attrs
}
