package bus_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
)

// tag is a middleware that records entering and leaving, and the name of
// the handler it wraps.
func tag(r *recorder, name string) bus.Middleware {
	return func(next bus.Handler) bus.Handler {
		return func(ctx context.Context, event any) error {
			r.add(name + ">" + bus.HandlerName(ctx))
			err := next(ctx, event)
			r.add("<" + name)
			return err
		}
	}
}

func TestMiddlewareOrderFirstAddedIsOutermost(t *testing.T) {
	t.Parallel()
	var r recorder
	b := setup(t, bus.WithMiddleware(tag(&r, "bus1"), tag(&r, "bus2")))
	subscribe(t, b, record[minute](&r, "handler", nil), bus.Name("h"), bus.Use(tag(&r, "a"), tag(&r, "b")))

	require.NoError(t, bus.PublishEvent(t.Context(), b, minute{1}))
	require.Equal(t, []string{"bus1>h", "bus2>h", "a>h", "b>h", "handler:minute1", "<b", "<a", "<bus2", "<bus1"}, r.all())
	require.Empty(t, bus.HandlerName(t.Context()), "no name outside a middleware chain")
}

func TestMiddlewarePanicIsAnError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	broken := func(bus.Handler) bus.Handler {
		return func(context.Context, any) error { panic("middleware bug") }
	}
	subscribe(t, b, func(context.Context, minute) error { return nil }, bus.Use(broken), bus.Name("h"))
	var pe *bus.PanicError
	require.ErrorAs(t, b.Publish(t.Context(), minute{}), &pe)
	require.Equal(t, "middleware bug", pe.Value)
}

// flaky fails its first failures calls with err, then succeeds.
type flaky struct {
	calls    atomic.Int32
	failures int32
	err      error
}

func (f *flaky) handle(context.Context, orderPlaced) error {
	if f.calls.Add(1) <= f.failures {
		return f.err
	}
	return nil
}

func publishAsync(b *bus.Bus, ctx context.Context, e any) <-chan error {
	done := make(chan error, 1)
	go func() { done <- b.Publish(ctx, e) }()
	return done
}

func TestRetryBacksOffExponentiallyOnTheClock(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	retry, err := bus.Retry(bus.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Second, Multiplier: 2, Clock: clock})
	require.NoError(t, err)
	b := setup(t)
	f := &flaky{failures: 3, err: errors.New("database busy")}
	subscribe(t, b, f.handle, bus.Use(retry))

	ctx := t.Context()
	done := publishAsync(b, ctx, orderPlaced{})
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		require.NoError(t, clock.BlockUntilContext(ctx, 1))
		require.Equal(t, int32(i+1), f.calls.Load())
		// Just short of the backoff, the handler must not run again.
		clock.Advance(wait - time.Millisecond)
		require.NoError(t, clock.BlockUntilContext(ctx, 1))
		require.Equal(t, int32(i+1), f.calls.Load(), "attempt %d ran before its backoff of %s", i+2, wait)
		clock.Advance(time.Millisecond)
	}
	require.NoError(t, <-done)
	require.Equal(t, int32(4), f.calls.Load())
}

func TestRetryGivesUpAndTheDeadLetterGetsTheFinalError(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	retry, err := bus.Retry(bus.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Second, Clock: clock})
	require.NoError(t, err)
	dead := make(chan *bus.HandlerError, 10)
	b := setup(t, bus.WithDeadLetter(func(_ context.Context, err *bus.HandlerError) { dead <- err }))
	busy := errors.New("database busy")
	f := &flaky{failures: 100, err: busy}
	subscribe(t, b, f.handle, bus.Use(retry), bus.Name("save"))

	done := publishAsync(b, t.Context(), orderPlaced{})
	require.NoError(t, clock.BlockUntilContext(t.Context(), 1))
	clock.Advance(time.Second)
	err = <-done
	require.ErrorIs(t, err, busy)
	require.ErrorContains(t, err, `handler "save" on bus_test.orderPlaced: after 2 attempt(s): database busy`)
	require.Equal(t, int32(2), f.calls.Load())
	require.Len(t, dead, 1, "the dead letter hears of the final failure once, not of each attempt")
	require.ErrorIs(t, <-dead, busy)
}

func TestRetryAsksThePredicate(t *testing.T) {
	t.Parallel()
	permanent := errors.New("order not found")
	retry, err := bus.Retry(bus.RetryPolicy{
		MaxAttempts: 5,
		Retryable:   func(err error) bool { return !errors.Is(err, permanent) },
		Clock:       clockwork.NewFakeClock(),
	})
	require.NoError(t, err)
	b := setup(t)
	f := &flaky{failures: 100, err: permanent}
	subscribe(t, b, f.handle, bus.Use(retry))

	err = b.Publish(t.Context(), orderPlaced{})
	require.ErrorIs(t, err, permanent)
	require.Equal(t, int32(1), f.calls.Load(), "a permanent error is not retried")

	retryDefault, err := bus.Retry(bus.RetryPolicy{Clock: clockwork.NewFakeClock()})
	require.NoError(t, err)
	b2 := setup(t)
	panics := 0
	subscribe(t, b2, func(context.Context, orderPlaced) error { panics++; panic("bug") }, bus.Use(retryDefault))
	require.Error(t, b2.Publish(t.Context(), orderPlaced{}))
	require.Equal(t, 1, panics, "by default a panic is a bug, not retried")
}

func TestRetryStopsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	retry, err := bus.Retry(bus.RetryPolicy{InitialBackoff: time.Minute, Clock: clock})
	require.NoError(t, err)
	b := setup(t)
	busy := errors.New("database busy")
	subscribe(t, b, (&flaky{failures: 100, err: busy}).handle, bus.Use(retry))

	ctx, cancel := context.WithCancel(t.Context())
	done := publishAsync(b, ctx, orderPlaced{})
	require.NoError(t, clock.BlockUntilContext(t.Context(), 1))
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, busy, "the last failure is kept")
	require.ErrorContains(t, err, "retry stopped after 1 attempt(s)")
}

func TestRetryAndTimeoutRejectBadSettings(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]bus.RetryPolicy{
		"MaxAttempts must not be negative":    {MaxAttempts: -1},
		"InitialBackoff must not be negative": {InitialBackoff: -time.Second},
		"MaxBackoff must not be negative":     {MaxBackoff: -time.Second},
		"Multiplier must be at least 1":       {Multiplier: 0.5},
	} {
		mw, err := bus.Retry(p)
		require.ErrorContains(t, err, name)
		require.Nil(t, mw)
	}
	mw, err := bus.Timeout(0, nil)
	require.ErrorContains(t, err, "duration must be positive, got 0s")
	require.Nil(t, mw)
}

func TestTimeoutEndsTheHandlersContext(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	timeout, err := bus.Timeout(5*time.Second, clock)
	require.NoError(t, err)
	b := setup(t)
	subscribe(t, b, func(ctx context.Context, e orderPlaced) error {
		if e.Seq == 0 {
			return nil // in time
		}
		<-ctx.Done()
		return ctx.Err()
	}, bus.Use(timeout), bus.Name("slow"))

	done := publishAsync(b, t.Context(), orderPlaced{Seq: 1})
	require.NoError(t, clock.BlockUntilContext(t.Context(), 1))
	clock.Advance(5 * time.Second)
	err = <-done
	require.ErrorIs(t, err, bus.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the handler's own error is kept")
	require.ErrorContains(t, err, `handler "slow" on bus_test.orderPlaced: bus: handler timed out after 5s: `)

	// Last, because the fake clock keeps a cancelled context's timer, which
	// would satisfy BlockUntilContext above.
	require.NoError(t, b.Publish(t.Context(), orderPlaced{Seq: 0}), "a handler done in time is not blamed")
}

func TestTimeoutDoesNotFailAHandlerThatSucceededLate(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	timeout, err := bus.Timeout(5*time.Second, nil)
	require.NoError(t, err)
	b := setup(t, bus.WithClock(clock))
	subscribe(t, b, func(ctx context.Context, _ orderPlaced) error {
		<-ctx.Done()
		return nil // finished its work despite the deadline
	}, bus.Use(timeout))

	done := publishAsync(b, t.Context(), orderPlaced{})
	require.NoError(t, clock.BlockUntilContext(t.Context(), 1), "nil clock: the bus's clock times the call")
	clock.Advance(5 * time.Second)
	require.NoError(t, <-done)
}

// retryThenTimeout subscribes h behind Retry (3 attempts, 1s apart) and,
// inside it, a Timeout of 5s per attempt, both timed by the bus's clock.
func retryThenTimeout(t *testing.T, h func(context.Context, orderPlaced) error) (*bus.Bus, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClock()
	retry, err := bus.Retry(bus.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second})
	require.NoError(t, err)
	timeout, err := bus.Timeout(5*time.Second, nil)
	require.NoError(t, err)
	b := setup(t, bus.WithClock(clock))
	subscribe(t, b, h, bus.Use(retry, timeout))
	return b, clock
}

func TestRetryRetriesAnAttemptThatTimedOut(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	b, clock := retryThenTimeout(t, func(ctx context.Context, _ orderPlaced) error {
		if calls.Add(1) == 1 {
			<-ctx.Done() // stuck until the attempt's deadline
			return ctx.Err()
		}
		return nil
	})

	done := publishAsync(b, t.Context(), orderPlaced{})
	// Bounded, so that a Retry that gives up fails the test, not hangs it.
	ctx, cancel := context.WithTimeout(t.Context(), failAfter)
	defer cancel()
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "the first attempt's deadline")
	clock.Advance(5 * time.Second)
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "the backoff after the timeout")
	clock.Advance(time.Second)
	require.NoError(t, <-done)
	require.Equal(t, int32(2), calls.Load())
}

func TestRetryDoesNotRetryWhenTheCallersContextEnded(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	b, clock := retryThenTimeout(t, func(ctx context.Context, _ orderPlaced) error {
		calls.Add(1)
		<-ctx.Done()
		return ctx.Err()
	})

	ctx, cancel := context.WithCancel(t.Context())
	done := publishAsync(b, ctx, orderPlaced{})
	require.NoError(t, clock.BlockUntilContext(t.Context(), 1), "the first attempt is running")
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, bus.ErrTimeout, "the caller, not the timeout, ended the call")
	require.ErrorContains(t, err, "after 1 attempt(s): context canceled")
	require.Equal(t, int32(1), calls.Load())
}

// timerLog is a fake clock that also reports the duration of every timer
// made on it.
type timerLog struct {
	*clockwork.FakeClock
	waits chan time.Duration
}

func (c timerLog) NewTimer(d time.Duration) clockwork.Timer {
	c.waits <- d
	return c.FakeClock.NewTimer(d)
}

func TestRetryBackoffStaysCappedOverManyAttempts(t *testing.T) {
	t.Parallel()
	const attempts = 100 // a second doubled overflows a Duration after 34
	clock := timerLog{FakeClock: clockwork.NewFakeClock(), waits: make(chan time.Duration, 1)}
	retry, err := bus.Retry(bus.RetryPolicy{MaxAttempts: attempts, InitialBackoff: time.Second, MaxBackoff: time.Hour, Clock: clock})
	require.NoError(t, err)
	b := setup(t)
	f := &flaky{failures: attempts, err: errors.New("database busy")}
	subscribe(t, b, f.handle, bus.Use(retry))

	ctx := t.Context()
	done := publishAsync(b, ctx, orderPlaced{})
	want := time.Second
	for i := 1; i < attempts; i++ {
		var wait time.Duration
		select {
		case wait = <-clock.waits:
		case err := <-done:
			t.Fatalf("gave up after %d attempts: %v", f.calls.Load(), err)
		}
		require.Positive(t, wait, "wait after attempt %d", i)
		require.LessOrEqual(t, wait, time.Hour, "wait after attempt %d", i)
		require.Equal(t, want, wait, "wait after attempt %d", i)
		want = min(2*want, time.Hour)
		require.NoError(t, clock.BlockUntilContext(ctx, 1))
		clock.Advance(wait)
	}
	require.ErrorContains(t, <-done, "after 100 attempt(s): database busy")
	require.Equal(t, int32(attempts), f.calls.Load())
}

func TestLoggingRecordsEachCall(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	b := setup(t, bus.WithClock(clock), bus.WithMiddleware(bus.Logging(logger)))
	subscribe(t, b, func(_ context.Context, e orderPlaced) error {
		clock.Advance(2 * time.Second)
		if e.Seq == 1 {
			return errors.New("refused")
		}
		return nil
	}, bus.Name("save"))
	subscribe(t, b, func(context.Context, day) error { panic("bug") }, bus.Name("roll"))

	require.NoError(t, b.Publish(t.Context(), orderPlaced{}))
	require.Error(t, b.Publish(t.Context(), orderPlaced{Seq: 1}))
	require.Error(t, b.Publish(t.Context(), day{}))
	out := buf.String()
	require.Contains(t, out, `level=DEBUG msg="bus: handled" handler=save event=bus_test.orderPlaced duration=2s`+"\n")
	require.Contains(t, out, `level=ERROR msg="bus: handler failed" handler=save event=bus_test.orderPlaced duration=2s error=refused`+"\n")
	require.Contains(t, out, `level=ERROR msg="bus: handler failed" handler=roll event=bus_test.day duration=0s error="panic: bug" stack=`)
}

func TestMiddlewareWrapsAsyncHandlersToo(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	retry, err := bus.Retry(bus.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Second, Clock: clock})
	require.NoError(t, err)
	b := setup(t)
	f := &flaky{failures: 1, err: errors.New("busy")}
	handled := make(chan struct{})
	subscribe(t, b, func(ctx context.Context, e orderPlaced) error {
		if err := f.handle(ctx, e); err != nil {
			return err
		}
		close(handled)
		return nil
	}, bus.Async(1, 1), bus.Use(retry))

	require.NoError(t, b.Publish(t.Context(), orderPlaced{}))
	require.NoError(t, clock.BlockUntilContext(t.Context(), 1))
	clock.Advance(time.Second)
	<-handled
	require.Equal(t, int32(2), f.calls.Load())
}
