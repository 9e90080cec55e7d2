package tick

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// cursorBatch is how many events a catch-up publishes between cursor
// writes. A crash in between re-publishes at most this many (events are
// idempotent); per-event writes would bound SQLite catch-up by fsyncs.
var cursorBatch = 256

// pass emits, for every unit, what is due in (cursor, now]. Boundaries
// before liveFrom passed while the ticker was not running and count as
// missed. A failing unit does not stop the others, except when the lease
// is lost: then nothing more may be written.
func (t *Ticker) pass(ctx context.Context, now, liveFrom time.Time) error {
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	lease, err := t.lease(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, u := range t.cfg.units {
		err := t.emitUnit(ctx, lease, u, now, liveFrom)
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotLeader) {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// leaseHold is the lease a pass emits under; zero term without WithLease.
type leaseHold struct {
	term  int64
	taken time.Time // by the clock, to renew during a long pass
}

func (t *Ticker) lease(ctx context.Context) (*leaseHold, error) {
	if t.cfg.holder == "" {
		return &leaseHold{}, nil
	}
	now := t.cfg.clock.Now()
	l, err := t.store.AcquireLease(ctx, t.cfg.holder, now, t.cfg.ttl)
	if err != nil {
		return nil, err
	}
	if l.Holder != t.cfg.holder {
		return nil, fmt.Errorf("%w: %q until %v", ErrNotLeader, l.Holder, l.Expires)
	}
	return &leaseHold{term: l.Term, taken: now}, nil
}

// renew keeps the lease during a long pass, a third of its ttl at a time.
func (t *Ticker) renew(ctx context.Context, h *leaseHold) error {
	if h.term == 0 || t.cfg.clock.Since(h.taken) < t.cfg.ttl/3 {
		return nil
	}
	fresh, err := t.lease(ctx)
	if err != nil {
		return err
	}
	if fresh.term != h.term {
		return fmt.Errorf("%w: term %d became %d during the pass", ErrLeaseLost, h.term, fresh.term)
	}
	*h = *fresh
	return nil
}

// emitUnit is one unit's share of a pass.
func (t *Ticker) emitUnit(ctx context.Context, h *leaseHold, u Unit, now, liveFrom time.Time) error {
	loc := t.cfg.loc
	cur, err := t.store.Cursor(ctx, u)
	if err != nil {
		return err
	}
	if cur.IsZero() {
		// First run ever: start from now. The latest boundary becomes the
		// cursor without an event, so a new deployment emits no storm.
		return t.store.Advance(ctx, u, time.Time{}, Previous(u, now, loc), h.term)
	}
	cur = cur.In(loc)
	first := Next(u, cur, loc)
	if first.After(now) {
		return nil // nothing due, or the clock went back: nothing twice
	}
	latest := Previous(u, now, loc)
	live := !latest.Before(liveFrom)
	policy := t.cfg.policy(u)
	p := planFor(policy, u, loc, first, latest, now, live)

	if p.keepFrom.After(first) {
		last, err := t.reportSkipped(ctx, u, policy, cur, p.keepFrom)
		if err != nil {
			return err
		}
		if p.keepFrom.After(latest) {
			return t.store.Advance(ctx, u, cur, last, h.term)
		}
	}

	e := emission{t: t, h: h, unit: u, persisted: cur, prev: cur}
	for b := p.keepFrom; !b.After(latest); b = Next(u, b, loc) {
		if err := e.emit(ctx, b, !live || b.Before(latest)); err != nil {
			return errors.Join(err, e.flush(ctx))
		}
	}
	return e.flush(ctx)
}

// reportSkipped publishes the TicksSkipped for the boundaries in
// (cur, before) and returns the last of them.
func (t *Ticker) reportSkipped(ctx context.Context, u Unit, policy CatchUp, cur, before time.Time) (time.Time, error) {
	s := TicksSkipped{Unit: u, Policy: policy.name()}
	for b := range Boundaries(u, cur, before.Add(-time.Nanosecond), t.cfg.loc) {
		if s.Count == 0 {
			s.From = b
		}
		s.To = b
		s.Count++
	}
	s.EmittedAt = t.cfg.clock.Now()
	if err := t.publish(ctx, s); err != nil {
		t.stats.failures.Add(1)
		if f := t.cfg.observer.PublishFailed; f != nil {
			f(u, s.From, err)
		}
		return time.Time{}, fmt.Errorf("tick: publish %s skip report %v..%v: %w", u, s.From, s.To, err)
	}
	t.stats.skipped.Add(s.Count)
	if f := t.cfg.observer.Skipped; f != nil {
		f(s)
	}
	return s.To, nil
}

// emission publishes one unit's boundaries in order and moves its cursor
// in batches.
type emission struct {
	t         *Ticker
	h         *leaseHold
	unit      Unit
	persisted time.Time // the cursor as stored
	prev      time.Time // the last boundary published
	pending   int
}

func (e *emission) emit(ctx context.Context, b time.Time, catchUp bool) error {
	t := e.t
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tick: emit %s %v: %w", e.unit, b, err)
	}
	at := t.cfg.clock.Now()
	ev, err := NewEvent(e.unit, Passage{At: b, Since: e.prev, EmittedAt: at, CatchUp: catchUp})
	if err != nil {
		return err
	}
	if err := t.publish(ctx, ev); err != nil {
		t.stats.failures.Add(1)
		if f := t.cfg.observer.PublishFailed; f != nil {
			f(e.unit, b, err)
		}
		return fmt.Errorf("tick: publish %s: %w", ev.ID(), err)
	}
	t.stats.emitted.Add(1)
	if f := t.cfg.observer.Emitted; f != nil {
		f(ev, at.Sub(b))
	}
	e.prev = b
	if e.pending++; e.pending >= cursorBatch {
		return e.flush(ctx)
	}
	return nil
}

// flush writes the cursor up to the last published boundary.
func (e *emission) flush(ctx context.Context) error {
	if !e.prev.After(e.persisted) {
		return nil
	}
	if err := e.t.renew(ctx, e.h); err != nil {
		return err
	}
	// A cancelled pass still records what it published.
	if err := e.t.store.Advance(context.WithoutCancel(ctx), e.unit, e.persisted, e.prev, e.h.term); err != nil {
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
