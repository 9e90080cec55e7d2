package todolist

import (
	"context"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Runner works a list on its own, without waiting for a tick: it wakes
// when the earliest item falls due (and at least every MaxWait), so
// items are acted on within a second of their due time instead of up to
// a minute later at the next MinuteHasPassed.
//
// It stays level-triggered. The wake-up time is a hint read from the list
// (the earliest due time among its unparked items); each wake-up processes
// whatever is due by the clock's now, exactly as a tick would. A wake-up
// that is lost or late costs nothing: the next one finds the items still
// due. An item added in another process is seen within MaxWait; one added
// in this process can be announced with Poke to be seen at once.
type Runner struct {
	p       *Processor
	maxWait time.Duration
	minGap  time.Duration
	poke    chan struct{}
	onError func(error)

	// sleeping, when set (tests), is told each wait once its timer is
	// armed, so a test can advance a fake clock by exactly that much.
	sleeping func(wait time.Duration)
}

// RunnerOption configures a Runner.
type RunnerOption func(*Runner) error

// WithMaxWait bounds how long the runner sleeps when the earliest item is
// far off or unknown (another process may add an earlier one); default 1 s.
func WithMaxWait(d time.Duration) RunnerOption {
	return func(r *Runner) error {
		if d <= 0 || d > time.Hour {
			return invalid("WithMaxWait", "%v: must be positive and at most an hour", d)
		}
		r.maxWait = d
		return nil
	}
}

// WithRunnerErrors receives the errors of passes that could not work the
// list (storage failed); the runner goes on after them. Without it they
// are dropped: the next pass tries again.
func WithRunnerErrors(f func(error)) RunnerOption {
	return func(r *Runner) error {
		r.onError = f
		return nil
	}
}

// NewRunner returns a runner of p, which keeps p's clock, batch size,
// lease and retry settings.
func NewRunner(p *Processor, opts ...RunnerOption) (*Runner, error) {
	if p == nil {
		return nil, fmt.Errorf("todolist: new runner: %w: nil processor", ErrInvalidArgument)
	}
	r := &Runner{p: p, maxWait: time.Second, minGap: 50 * time.Millisecond, poke: make(chan struct{}, 1)}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, fmt.Errorf("todolist: new runner for %q: %w", p.list.name, err)
		}
	}
	r.minGap = min(r.minGap, r.maxWait)
	return r, nil
}

// Poke tells the runner that an item may have become due earlier than the
// one it waits for (one was just added in this process); it looks again
// at once. It never blocks.
func (r *Runner) Poke() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Run works the list until ctx ends, and returns ctx's error then.
func (r *Runner) Run(ctx context.Context) error {
	clock := r.p.cfg.clock
	for {
		if _, err := r.p.Process(ctx, clock.Now()); err != nil && ctx.Err() == nil && r.onError != nil {
			r.onError(err)
		}
		wait := r.maxWait
		if next, ok, err := r.p.list.nextDue(ctx); err == nil && ok {
			// Never less than minGap: the earliest item may be held by
			// another processor's claim, and looking again at once would
			// spin until that claim ends.
			wait = min(max(next.Sub(clock.Now()), r.minGap), r.maxWait)
		} else if err != nil && ctx.Err() == nil && r.onError != nil {
			r.onError(err)
		}
		timer := clock.After(wait)
		if r.sleeping != nil {
			r.sleeping(wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer:
		case <-r.poke:
		}
	}
}

// nextDue returns the earliest time an unparked item of the list may be
// claimed (its due time, or the end of its backoff), if any.
func (l *List) nextDue(ctx context.Context) (time.Time, bool, error) {
	var at *int64
	if err := l.db.GetContext(ctx, &at, l.db.Rebind(`SELECT MIN(run_at) FROM todolist_items WHERE list = ? AND parked = 0`), l.name); err != nil {
		return time.Time{}, false, fmt.Errorf("todolist: next due item of %q: %w", l.name, err)
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return sqldb.DecodeTime(*at), true, nil
}
