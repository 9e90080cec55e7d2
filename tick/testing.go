package tick

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// AdvanceAndWait is for tests: it advances clock by d and returns once
// every given ticker has emitted everything that became due, through the
// production path — gocron's timer fires on the fake clock and wakes the
// ticker, whose pass computes and publishes the boundaries. A simulated week
// of minutes runs in milliseconds, without sleeping.
//
// The tickers must be started with WithClock(clock). AdvanceAndWait first
// waits until each has its wake-up timer armed (so the advance cannot slip
// in before gocron has scheduled it), then advances once, then waits for
// each ticker's pass at the new time — or for the pass already owed, such
// as a restart's first catch-up. It returns ErrNotRunning when a ticker is
// stopped meanwhile, or ctx's error. A ticker on another clock (the real
// one, by default) would never see the advance and the wait would hang, so
// it is refused at once with ErrWrongClock.
func AdvanceAndWait(ctx context.Context, clock *clockwork.FakeClock, d time.Duration, tickers ...*Ticker) error {
	if clock == nil {
		return fmt.Errorf("%w: AdvanceAndWait was given a nil clock", ErrWrongClock)
	}
	for i, t := range tickers {
		if t.cfg.clock != clockwork.Clock(clock) {
			return fmt.Errorf("%w: ticker %d of %d runs on a %T, not on the fake clock given to AdvanceAndWait: create it with WithClock(clock)",
				ErrWrongClock, i+1, len(tickers), t.cfg.clock)
		}
	}
	armedFor := make([]time.Time, len(tickers))
	for i, t := range tickers {
		at, err := t.waitArmed(ctx)
		if err != nil {
			return err
		}
		armedFor[i] = at
	}
	clock.Advance(d)
	now := clock.Now()
	for i, t := range tickers {
		var target time.Time
		t.mu.Lock()
		target = t.owed
		t.mu.Unlock()
		if !armedFor[i].After(now) && now.After(target) {
			target = now
		}
		if err := t.waitFor(ctx, func() bool { return !t.done.Before(target) }, nil); err != nil {
			t.mu.Lock()
			done := t.done
			t.mu.Unlock()
			return fmt.Errorf("tick: wait for the pass at %s (the last ran at %s): %w", timefmt.Format(target), timefmt.Format(done), err)
		}
	}
	return nil
}

// waitArmed waits until the passes already triggered are over (a start's
// first pass runs at the time it was owed, not at an advanced one) and
// gocron's wake-up timer is armed, and returns when it fires.
func (t *Ticker) waitArmed(ctx context.Context) (time.Time, error) {
	var at time.Time
	err := t.waitFor(ctx, func() bool { return !t.done.Before(t.owed) && t.armed != nil }, func() { at = t.armedFor })
	if err != nil {
		return time.Time{}, fmt.Errorf("tick: wait for the wake-up timer: %w", err)
	}
	return at, nil
}

// waitFor blocks until cond holds (checked under mu, then then runs under
// mu), the ticker stops, or ctx ends.
func (t *Ticker) waitFor(ctx context.Context, cond func() bool, then func()) error {
	for {
		t.mu.Lock()
		if cond() {
			if then != nil {
				then()
			}
			t.mu.Unlock()
			return nil
		}
		if !t.running {
			t.mu.Unlock()
			return ErrNotRunning
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
