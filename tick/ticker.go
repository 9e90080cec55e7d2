package tick

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// Publisher is where a Ticker sends its events. It has exactly the signature
// of bus.Bus's Publish, so a *bus.Bus is a Publisher and tick does not
// import bus. Publish is called with one event at a time, from one
// goroutine at a time per Ticker; a non-nil error means the event may not
// have been delivered, and the ticker publishes it again later (handlers are
// idempotent: see Event.ID). Cancelling ctx asks Publish to give up.
type Publisher interface {
	Publish(ctx context.Context, events ...any) error
}

// Ticker publishes the passage of time. gocron wakes it at the nearest
// boundary of its units; at every wake-up it emits, per unit, the
// boundaries in (cursor, now] as its catch-up policy says and advances the
// durable cursor with compare-and-swap. The cursor, not the timer, decides
// what is emitted: a restart, a sleeping machine or a clock jump neither
// loses nor doubles a boundary.
//
// A Ticker is safe for concurrent use; emission passes never overlap.
type Ticker struct {
	cfg   config
	pub   Publisher
	store CursorStore
	stats counters
	tel   telemetry

	emitMu sync.Mutex // one emission pass at a time

	mu        sync.Mutex
	sched     gocron.Scheduler
	running   bool
	startedAt time.Time
	cancelRun context.CancelFunc
	runCtx    context.Context
	stopping  chan struct{} // closed by Stop: the pass in flight ends early
	progress                // guarded by mu; see wake.go
	wakeState               // guarded by mu; see wake.go
	health    health        // guarded by mu; see Health
	keeping   *keeper       // guarded by mu; the keeper of the pass in flight, if any
	leaseLoss LeaseLoss     // guarded by mu; see LastLeaseLoss
	// heldTerm is the term of the lease the last pass held (0: none),
	// and otherHolder the holder a pass last found holding it instead;
	// both guarded by emitMu, for Observer.LeaseTaken.
	heldTerm    int64
	otherHolder string
}

// New returns a Ticker publishing to pub and keeping its cursors in store.
// Options are checked here; a bad one is an error naming it.
func New(pub Publisher, store CursorStore, opts ...Option) (*Ticker, error) {
	if pub == nil {
		return nil, fmt.Errorf("%w: publisher must not be nil", ErrInvalidOption)
	}
	if store == nil {
		return nil, fmt.Errorf("%w: cursor store must not be nil", ErrInvalidOption)
	}
	cfg := defaults()
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	for u := range cfg.policies {
		if !slices.Contains(cfg.units, u) {
			return nil, fmt.Errorf("%w: WithCatchUp(%s) for a unit the ticker does not publish", ErrInvalidOption, u)
		}
	}
	return &Ticker{cfg: cfg, pub: pub, store: store, tel: newTelemetry(&cfg), progress: newProgress()}, nil
}

// Start starts the gocron scheduler and returns at once. The first emission
// pass runs immediately, so boundaries missed while the process was down are
// caught up without waiting for the next one. Errors of later passes are
// logged, counted (Stats.PublishFailures, Stats.StoreFailures) and reported
// to the Observer, never returned; a failed pass is retried after the retry
// backoff (WithRetryBackoff) or at the next boundary, whichever is sooner.
// ctx's values reach the publisher; stop the ticker with Stop, not by
// cancelling ctx.
func (t *Ticker) Start(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return ErrAlreadyStarted
	}
	sched, err := gocron.NewScheduler(
		gocron.WithClock(wakeClock{Clock: t.cfg.clock, t: t}),
		gocron.WithLocation(t.cfg.loc),
		// Stop's context bounds the wait, not gocron's timer.
		gocron.WithStopTimeout(24*time.Hour),
	)
	if err != nil {
		return fmt.Errorf("tick: create scheduler: %w", err)
	}
	_, err = sched.NewJob(
		gocron.CronJob("passage tick", false),
		gocron.NewTask(t.wake),
		gocron.WithCronImplementation(wakeSchedule{t}),
		gocron.WithName("passage tick"),
		// The next wake-up is computed once the pass is over, from what it
		// did: a failed pass is retried, the lease is renewed or watched.
		// It also means passes never queue up behind a long catch-up.
		gocron.WithIntervalFromCompletion(),
		gocron.WithSingletonMode(gocron.LimitModeWait),
		gocron.WithStartAt(gocron.WithStartImmediately()),
	)
	if err != nil {
		_ = sched.Shutdown()
		return fmt.Errorf("tick: schedule wake-ups: %w", err)
	}
	t.runCtx, t.cancelRun = context.WithCancel(context.WithoutCancel(ctx))
	t.stopping = make(chan struct{})
	t.sched, t.running = sched, true
	t.startedAt = t.cfg.clock.Now()
	t.wakeState = wakeState{}
	t.owe(t.startedAt)
	sched.Start()
	return nil
}

// Stop stops waking up and ends the emission in flight between two events:
// the event being published is finished, the cursor is written up to the
// last published boundary, and, with WithLease, the lease is released so
// that another replica (or a restart) takes over at once. Stop therefore
// waits for at most one publish and two store writes. If ctx ends first,
// the emission's context is cancelled and Stop returns ctx's error.
// Stopping twice, or a ticker never started, is harmless.
//
// Stop also releases the lease that EmitDue or EmitUntil took on a ticker
// that was never started: a run-once process (a cron job, a backfill)
// calls Stop before it exits, and the next run, with its own holder id,
// takes the lease at once instead of waiting for it to expire.
func (t *Ticker) Stop(ctx context.Context) error {
	t.mu.Lock()
	if !t.running {
		t.mu.Unlock()
		return t.release(ctx)
	}
	sched, cancel := t.sched, t.cancelRun
	t.running, t.sched = false, nil
	close(t.stopping)
	t.notify()
	t.mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- sched.Shutdown() }()
	select {
	case err := <-done:
		cancel()
		if err != nil {
			return fmt.Errorf("tick: stop scheduler: %w", err)
		}
		return t.release(ctx)
	case <-ctx.Done():
		cancel()
		return fmt.Errorf("tick: stop: %w", ctx.Err())
	}
}

// release gives up the lease the last wake-up held, if any.
func (t *Ticker) release(ctx context.Context) error {
	t.mu.Lock()
	h := t.held
	t.held = nil
	t.mu.Unlock()
	if h == nil {
		return nil
	}
	if err := t.storeFailed("", t.store.ReleaseLease(ctx, t.cfg.holder, h.term)); err != nil {
		return fmt.Errorf("tick: stop: %w", err)
	}
	return nil
}

// EmitDue runs one emission pass at the clock's now, synchronously, and
// returns its error: what a wake-up does, for a process that runs once
// (the CLI's --once). With WithLease it returns ErrNotLeader when another
// replica holds the lease; otherwise it takes the lease and keeps it, for
// the next call to renew and for Stop to release. It needs no Start and may
// run beside one.
func (t *Ticker) EmitDue(ctx context.Context) error {
	out, err := t.run(ctx, t.cfg.clock.Now(), passMode{liveFrom: t.liveFrom()})
	t.keep(out, err)
	return err
}

// keep records the lease an EmitDue or EmitUntil pass left held, for Stop
// to release; a pass that failed before reaching the lease changes nothing.
func (t *Ticker) keep(out outcome, err error) {
	if t.cfg.holder == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case out.lease != nil:
		t.held = out.lease
	case errors.Is(err, ErrNotLeader) || errors.Is(err, ErrLeaseLost):
		t.held = nil
	}
}

// EmitUntil emits the boundaries up to until (a backfill), as a pass at
// until would, with every boundary marked CatchUp and the catch-up policies
// applied as at a restart at until. It starts from each unit's cursor and
// never moves one back: a unit without a cursor, or whose cursor is at or
// after until's latest boundary, is left alone. until must not be after the
// clock's now (ErrFuture). When no unit had anything to emit — until is the
// zero time, or at or behind every cursor — it returns an error wrapping
// ErrNothingToBackfill that says so, naming each unit's cursor, and has
// emitted and moved nothing; a caller may treat that as a no-op.
//
// With WithLease, EmitUntil and EmitDue take the lease, and keep it after
// they return so that the next call renews it; a process that ends after
// them calls Stop, which releases it, so that another replica need not wait
// for it to expire.
func (t *Ticker) EmitUntil(ctx context.Context, until time.Time) error {
	if until.IsZero() {
		return fmt.Errorf("%w: until is the zero time (%s), before every cursor", ErrNothingToBackfill, timefmt.Format(until))
	}
	if now := t.cfg.clock.Now(); until.After(now) {
		return fmt.Errorf("%w: EmitUntil(%s) with the clock at %s", ErrFuture, timefmt.Format(until), timefmt.Format(now))
	}
	out, err := t.run(ctx, until, passMode{liveFrom: farFuture, backfill: true})
	t.keep(out, err)
	if err == nil && out.published == 0 {
		return fmt.Errorf("%w: no boundary lies after a cursor and at or before %s (%s)",
			ErrNothingToBackfill, timefmt.Format(until), strings.Join(out.idle, "; "))
	}
	return err
}

// Stats returns the ticker's running totals.
func (t *Ticker) Stats() Stats { return t.stats.snapshot() }

// farFuture makes every boundary a catch-up.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// liveFrom is the instant before which a boundary counts as missed: the
// ticker's start, or nothing when it is not running.
func (t *Ticker) liveFrom() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return t.startedAt
	}
	return time.Time{}
}

// wake is gocron's task: one pass at the clock's now, whose outcome
// decides the next wake-up (wake.go).
func (t *Ticker) wake() {
	t.mu.Lock()
	ctx, stop := t.runCtx, t.stopping
	t.mu.Unlock()
	now := t.cfg.clock.Now()
	out, err := t.run(ctx, now, passMode{liveFrom: t.liveFrom(), stop: stop})
	retry := t.schedule(now, t.cfg.clock.Now(), out, err)
	switch {
	case errors.Is(err, ErrNotLeader):
		t.cfg.logger.Debug("tick: not the leader, nothing emitted", "error", err)
	case err != nil:
		t.cfg.logger.Error("tick: emission failed", "error", err, "retry_at", timefmt.Format(retry))
	}
}

// run is one emission pass, recorded for Health and AdvanceAndWait.
func (t *Ticker) run(ctx context.Context, now time.Time, m passMode) (outcome, error) {
	out, err := t.pass(ctx, now, m)
	t.stats.passes.Add(1)
	t.record(ctx, err)
	t.passed(now)
	return out, err
}

// health is what the passes since the last good one left for Health.
type health struct {
	err         error     // the last failed pass's error; nil after a good pass
	since, last time.Time // by the clock: the first and last failed pass in a row
	failures    int       // failed passes in a row
}

// Health reports whether emission works, for a health check such as an
// HTTP /healthz: nil until a pass fails and again after the next pass that
// succeeds; in between, an error wrapping ErrUnhealthy and the last failed
// pass's error (a publish or store error), saying since when — by the
// ticker's clock, printed with timefmt.Format — and how many passes in a row
// failed. A standby replica (ErrNotLeader) is healthy: another emits. A
// pass cut short by Stop or by its caller's context changes nothing.
//
// With WithLease, a pass still running a ttl or more after the store last
// confirmed its lease is unhealthy while it runs: an error wrapping
// ErrUnhealthy and ErrLeaseLost says since when the lease is unconfirmed.
// That is a publish that ignores its cancelled context after the lease was
// lost, or a store that hangs; the keeper (see WithLease) normally renews
// the lease every third of the ttl, however long a publish takes. A lease
// lost during a pass that then ended is no failure of its own (another
// replica emits, or the next pass takes the lease again): LastLeaseLoss
// tells when it last happened.
//
// Every pass counts: wake-ups of a started ticker, EmitDue and EmitUntil.
// A failed wake-up is retried after the retry backoff (WithRetryBackoff),
// so a store that recovers turns Health back to nil within that backoff.
func (t *Ticker) Health() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if taken := t.keeping.unrenewed(); !taken.IsZero() {
		if now := t.cfg.clock.Now(); now.Sub(taken) >= t.cfg.ttl {
			return fmt.Errorf("%w: a pass still runs on a lease last confirmed %v ago, at %s (ttl %v): %w",
				ErrUnhealthy, now.Sub(taken), timefmt.Format(taken), t.cfg.ttl, ErrLeaseLost)
		}
	}
	h := t.health
	if h.err == nil {
		return nil
	}
	return fmt.Errorf("%w since %s (%d failed passes in a row, the last at %s): %w",
		ErrUnhealthy, timefmt.Format(h.since), h.failures, timefmt.Format(h.last), h.err)
}

// HoldsLease reports whether this ticker holds the lease now, by its
// clock: the store confirmed it to this holder — at the last pass, or by
// the renewals of the pass in flight — less than a ttl ago, and no pass
// lost it since. Work that only the emitting replica may do (delivering
// an outbox's records, say) asks it before each round: a standby answers
// false until it takes the lease, and a holder that stopped (Stop
// released the lease) or stalled past the ttl answers false. It is a
// snapshot: the lease may pass to another replica right after, so such
// work must stay correct, if redundant, when two replicas overlap.
//
// Without WithLease every ticker emits, and HoldsLease is always true.
func (t *Ticker) HoldsLease() bool {
	if t.cfg.holder == "" {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.clock.Now()
	if k := t.keeping; k != nil {
		k.mu.Lock()
		taken, lost := k.taken, k.lost
		k.mu.Unlock()
		return lost == nil && now.Before(taken.Add(t.cfg.ttl))
	}
	return t.held != nil && now.Before(t.held.taken.Add(t.cfg.ttl))
}

// LeaseLoss is a lease lost while a pass emitted under it (LastLeaseLoss).
type LeaseLoss struct {
	// At is when the pass found the lease lost, by the ticker's clock.
	At time.Time
	// Term is the fencing term the pass held.
	Term int64
	// Err says why, and wraps ErrLeaseLost: a renewal that failed, found
	// another holder, or came after the lease had run out (the process
	// stalled past the ttl).
	Err error
}

// LastLeaseLoss returns the last lease lost during a pass and true, or
// false when no pass has lost one. A holder loses its lease only when it
// cannot renew it — its store failed or it stalled longer than the ttl —
// so a health check may treat a recent loss as degraded even though the
// ticker, a standby now or the holder again, is healthy (Health).
func (t *Ticker) LastLeaseLoss() (LeaseLoss, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.leaseLoss, t.leaseLoss.Err != nil
}

// lostLease records a lease lost during a pass, for LastLeaseLoss.
func (t *Ticker) lostLease(at time.Time, term int64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.leaseLoss = LeaseLoss{At: at, Term: term, Err: err}
}

// record keeps a pass's outcome for Health.
func (t *Ticker) record(ctx context.Context, err error) {
	if err != nil && ctx.Err() != nil {
		return // cancelled by its caller or Stop: says nothing about the store
	}
	now := t.cfg.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	h := &t.health
	// Losing or not holding the lease is the lease doing its job: another
	// replica emits.
	if err == nil || errors.Is(err, ErrNotLeader) || errors.Is(err, ErrLeaseLost) {
		*h = health{}
		return
	}
	if h.failures == 0 {
		h.since = now
	}
	h.failures++
	h.err, h.last = err, now
}
