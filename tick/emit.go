package tick

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// cursorBatch is how many events a catch-up publishes between cursor
// writes. A crash in between re-publishes at most this many (events are
// idempotent); per-event writes would bound SQLite catch-up by fsyncs.
var cursorBatch = 256

// passMode says what kind of pass runs.
type passMode struct {
	// liveFrom is the instant before which a boundary counts as missed.
	liveFrom time.Time
	// stop, when closed, ends the pass between two events (Stop).
	stop <-chan struct{}
	// backfill leaves a unit without a cursor alone instead of recording
	// its starting point (EmitUntil).
	backfill bool
}

// outcome is what a pass did, for the wake-up schedule and EmitUntil.
type outcome struct {
	published int        // events and skip reports published
	lease     *leaseHold // the lease held at the end; nil without WithLease or when lost
	seen      Lease      // the lease as last read, with WithLease
	// idle says, per unit a backfill left alone, why: for EmitUntil's
	// ErrNothingToBackfill.
	idle []string
}

// pass emits, for every unit, what is due in (cursor, now]. A failing unit
// does not stop the others, except when the lease is lost: then nothing
// more may be written.
func (t *Ticker) pass(ctx context.Context, now time.Time, m passMode) (out outcome, err error) {
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	if stopping(m.stop) {
		return out, nil
	}
	h, err := t.takeLease(ctx, &out.seen)
	if err != nil {
		return out, err
	}
	// From here on the keeper renews the lease while the pass runs, and
	// ends the pass (ctx) should it be lost.
	ctx, k := t.keepLease(ctx, h)
	if k != nil {
		defer func() {
			held, lost, lostAt, failed := k.close()
			// Counted and reported here: Observer's callbacks run on the
			// emitting goroutine.
			_ = t.storeFailed("", failed)
			if lost != nil {
				t.heldTerm = 0
				t.lostLease(lostAt, k.term, lost)
				if f := t.cfg.observer.LeaseLost; f != nil {
					f(LeaseLoss{At: lostAt, Term: k.term, Err: lost})
				}
				if !errors.Is(err, ErrLeaseLost) {
					err = errors.Join(err, lost)
				}
			}
			out.lease = held
		}()
	}
	var errs []error
	for _, u := range t.cfg.units {
		if stopping(m.stop) {
			break
		}
		if err := k.holds(); err != nil {
			// Lost between two units: the next unit's reads would fail on
			// the cancelled context and count as store failures.
			return out, errors.Join(append(errs, err)...)
		}
		err := t.emitUnit(ctx, k, u, now, m, &out)
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotLeader) {
				return out, errors.Join(errs...)
			}
		}
	}
	return out, errors.Join(errs...)
}

func stopping(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// leaseHold is a lease taken or renewed; zero term without WithLease.
type leaseHold struct {
	term  int64
	taken time.Time // by the clock, when the store last confirmed it
}

// takeLease takes or renews the lease, recording what it saw in seen.
func (t *Ticker) takeLease(ctx context.Context, seen *Lease) (*leaseHold, error) {
	if t.cfg.holder == "" {
		return &leaseHold{}, nil
	}
	now := t.cfg.clock.Now()
	l, err := t.store.AcquireLease(ctx, t.cfg.holder, now, t.cfg.ttl)
	if err != nil {
		return nil, t.storeFailed("", err)
	}
	*seen = l
	if l.Holder != t.cfg.holder {
		if f := t.cfg.observer.LeaseLost; f != nil && t.heldTerm != 0 {
			// Held at the previous pass and taken over since: this
			// process stalled past the ttl between two passes.
			f(LeaseLoss{At: now, Term: t.heldTerm, Err: fmt.Errorf("%w: %q took it at term %d", ErrLeaseLost, l.Holder, l.Term)})
		}
		t.heldTerm, t.otherHolder = 0, l.Holder
		return nil, fmt.Errorf("%w: %q until %s", ErrNotLeader, l.Holder, timefmt.Format(l.Expires))
	}
	if l.Term != t.heldTerm {
		if f := t.cfg.observer.LeaseTaken; f != nil {
			f(LeaseTake{Term: l.Term, At: now, From: t.otherHolder})
		}
		t.heldTerm, t.otherHolder = l.Term, ""
	}
	return &leaseHold{term: l.Term, taken: now}, nil
}

// storeFailed counts and reports a failed store call on u's cursor, or
// on the lease when u is empty; refusals that are the store's job
// (ErrCursorMoved, ErrLeaseLost) are not failures.
func (t *Ticker) storeFailed(u Unit, err error) error {
	if err == nil || errors.Is(err, ErrCursorMoved) || errors.Is(err, ErrLeaseLost) {
		return err
	}
	t.stats.storeFailures.Add(1)
	t.tel.storeFailed(context.Background(), u)
	if f := t.cfg.observer.StoreFailed; f != nil {
		f(err)
	}
	return err
}

// advance moves unit's cursor, counting a failure.
func (t *Ticker) advance(ctx context.Context, u Unit, from, to time.Time, term int64) error {
	return t.storeFailed(u, t.store.Advance(ctx, u, from, to, term))
}

// emitUnit is one unit's share of a pass.
func (t *Ticker) emitUnit(ctx context.Context, k *keeper, u Unit, now time.Time, m passMode, out *outcome) error {
	loc := t.cfg.loc
	cur, err := t.store.Cursor(ctx, u)
	if err != nil {
		return t.storeFailed(u, err)
	}
	if cur.IsZero() {
		if m.backfill {
			// No starting point: nothing to backfill from.
			out.idle = append(out.idle, fmt.Sprintf("%s has no cursor yet (a first run records one)", u))
			return nil
		}
		// First run ever: start from now. The latest boundary becomes the
		// cursor without an event, so a new deployment emits no storm.
		return t.advance(ctx, u, time.Time{}, Previous(u, now, loc), k.fencing())
	}
	cur = cur.In(loc)
	first := Next(u, cur, loc)
	if first.After(now) {
		if m.backfill {
			out.idle = append(out.idle, fmt.Sprintf("%s cursor at %s", u, timefmt.Format(cur)))
		}
		return nil // nothing due, or the clock went back: nothing twice
	}
	latest := Previous(u, now, loc)
	live := !latest.Before(m.liveFrom)
	policy := t.cfg.policy(u)
	p := planFor(policy, u, loc, first, latest, now, live)

	persisted := cur
	if p.keepFrom.After(first) {
		last, err := t.reportSkipped(ctx, k, u, policy, cur, p.keepFrom)
		if err != nil {
			return err
		}
		out.published++
		// The cursor moves past the skipped boundaries before anything
		// else is published: should the next publish fail, the retry
		// starts after them and does not report them again.
		if err := t.advance(context.WithoutCancel(ctx), u, cur, last, k.fencing()); err != nil {
			return err
		}
		persisted = last
	}

	// The first event's Since is still cur, before the skipped boundaries
	// (see Passage.Since), though the cursor already stands on the last.
	e := unitEmission{t: t, k: k, unit: u, persisted: persisted, prev: cur, savedAt: t.cfg.clock.Now()}
	for b := p.keepFrom; !b.After(latest) && !stopping(m.stop); b = Next(u, b, loc) {
		if err := e.emit(ctx, b, !live || b.Before(latest)); err != nil {
			return errors.Join(err, e.flush(ctx))
		}
		out.published++
	}
	return e.flush(ctx)
}

// reportSkipped publishes the TicksSkipped for the boundaries in
// (cur, before) and returns the last of them.
func (t *Ticker) reportSkipped(ctx context.Context, k *keeper, u Unit, policy CatchUp, cur, before time.Time) (time.Time, error) {
	s := TicksSkipped{Unit: u, Policy: policy.name()}
	for b := range Boundaries(u, cur, before.Add(-time.Nanosecond), t.cfg.loc) {
		if s.Count == 0 {
			s.From = b
		}
		s.To = b
		s.Count++
	}
	if err := t.mayPublish(ctx, k); err != nil {
		return time.Time{}, fmt.Errorf("tick: publish %s skip report %s..%s: %w", u, timefmt.Format(s.From), timefmt.Format(s.To), err)
	}
	s.EmittedAt = t.cfg.clock.Now()
	sctx, span := t.tel.startSkip(ctx, s, s.EmittedAt)
	err := t.publish(sctx, s)
	t.endSpan(span, err)
	if err != nil {
		err = t.publishErr(k, u, s.From, err)
		return time.Time{}, fmt.Errorf("tick: publish %s skip report %s..%s: %w", u, timefmt.Format(s.From), timefmt.Format(s.To), err)
	}
	t.stats.skipped.Add(s.Count)
	t.tel.skipped(sctx, u, s.Count)
	if f := t.cfg.observer.Skipped; f != nil {
		f(s)
	}
	return s.To, nil
}

// mayPublish returns nil when the next event may be published: the pass
// was not cancelled and the lease, renewed first if due, still holds.
func (t *Ticker) mayPublish(ctx context.Context, k *keeper) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if err := k.renew(ctx); err != nil {
		return err
	}
	return k.holds()
}

// publishErr is what a failed publish means: when the lease was lost
// meanwhile, the loss (the publisher gave up because ctx was cancelled,
// which is not its failure); otherwise a publish failure, counted and
// reported.
func (t *Ticker) publishErr(k *keeper, u Unit, b time.Time, err error) error {
	if lost := k.holds(); lost != nil {
		return errors.Join(lost, err)
	}
	t.publishFailed(u, b, err)
	return err
}

func (t *Ticker) publishFailed(u Unit, b time.Time, err error) {
	t.stats.failures.Add(1)
	t.tel.publishFailed(context.Background(), u)
	if f := t.cfg.observer.PublishFailed; f != nil {
		f(u, b, err)
	}
}

// unitEmission publishes one unit's boundaries in order and moves its cursor
// in batches.
type unitEmission struct {
	t         *Ticker
	k         *keeper // nil without WithLease
	unit      Unit
	persisted time.Time // the cursor as stored
	savedAt   time.Time // by the clock, when the cursor was last written
	prev      time.Time // the last boundary published
	pending   int
}

func (e *unitEmission) emit(ctx context.Context, b time.Time, catchUp bool) error {
	t := e.t
	if e.k != nil && t.cfg.clock.Since(e.savedAt) >= t.renewEvery() {
		// Save what was published while the lease was surely ours, every
		// third of the ttl, so that a successor taking over after a stall
		// repeats as little as possible.
		if err := e.flush(ctx); err != nil {
			return err
		}
	}
	if err := t.mayPublish(ctx, e.k); err != nil {
		return fmt.Errorf("tick: emit %s %s: %w", e.unit, timefmt.Format(b), err)
	}
	at := t.cfg.clock.Now()
	ev, err := NewEvent(e.unit, Passage{At: b, Since: e.prev, EmittedAt: at, CatchUp: catchUp})
	if err != nil {
		return err
	}
	// The handlers get the emission's span in their ctx, to link theirs to.
	pctx, span := t.tel.startEmit(ctx, e.unit, b, catchUp, at)
	err = t.publish(pctx, ev)
	t.endSpan(span, err)
	if err != nil {
		return fmt.Errorf("tick: publish %s: %w", ev.ID(), t.publishErr(e.k, e.unit, b, err))
	}
	t.stats.emitted.Add(1)
	t.tel.emitted(pctx, e.unit, b, at)
	if f := t.cfg.observer.Emitted; f != nil {
		f(ev, at.Sub(b))
	}
	e.prev = b
	if e.pending++; e.pending >= cursorBatch {
		return e.flush(ctx)
	}
	return nil
}

// flush writes the cursor up to the last published boundary. The write
// is fenced by the lease's term, so a holder that lost the lease cannot
// move it.
func (e *unitEmission) flush(ctx context.Context) error {
	e.savedAt = e.t.cfg.clock.Now()
	if !e.prev.After(e.persisted) {
		return nil
	}
	// A cancelled pass still records what it published; one that lost the
	// lease is refused by the fence.
	if err := e.t.advance(context.WithoutCancel(ctx), e.unit, e.persisted, e.prev, e.k.fencing()); err != nil {
		return err
	}
	e.persisted, e.pending = e.prev, 0
	return nil
}

// publish calls the publisher, turning a panic into an error.
func (t *Ticker) publish(ctx context.Context, event any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tick: publisher panicked: %v", r)
		}
	}()
	return t.pub.Publish(ctx, event)
}

// endSpan ends span, if any, after a publish that returned err, at the
// clock's now.
func (t *Ticker) endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	ptel.End(span, err, t.cfg.clock.Now())
}
