package todolist

import (
	"context"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/tick"
)

// Action does what an item stands for, e.g. cancel the unpaid order with
// the item's ID. It is called with the item's state as claimed.
//
// Return nil when there is nothing left to do, including when the work
// turned out to be unnecessary (the order was paid meanwhile): the item is
// removed. Return an error to retry later with backoff; the item is parked
// after too many failures. An error that has, anywhere in its tree (what
// it wraps, every branch of a join, all the way down), a value with a
// method Conflict() bool returning true (such as the event store's version
// conflict) is not a failure, even beside real failures: the item is tried
// again on the next tick without counting an attempt (see the package
// documentation, Conflicts). A panic counts as a failure.
//
// Items are delivered at least once: a processor that dies, or loses its
// lease, after the action but before recording the outcome leaves the item
// to be worked again when its lease ends, so actions must be idempotent —
// an action that decides from current state, as a level-triggered one
// does, is. ctx ends when the tick's context does; a lost lease does not
// cancel an action already running.
//
// ctx also tells which item the action works: an action that removes its
// item with [List.RemoveTx] under ctx (or a context derived from it) — a
// projection of the list applied in the transaction appending the
// action's events does — counts it completed in that transaction, so the
// completion survives its processor (see the package documentation,
// Totals). Pass ctx on to whatever removes the item.
type Action func(ctx context.Context, item Item) error

// NewProcessor returns a processor running action for the due items of list.
// Without options it claims batches of [DefaultBatchSize] with a
// [DefaultLease] lease, backs off from [DefaultBackoffBase] to
// [DefaultBackoffMax], parks after [DefaultMaxAttempts] failures and stops a
// tick after [DefaultTimeBudget].
func NewProcessor(list *List, action Action, opts ...ProcessorOption) (*Processor, error) {
	if list == nil {
		return nil, fmt.Errorf("todolist: new processor: %w", ErrNilList)
	}
	if action == nil {
		return nil, fmt.Errorf("todolist: new processor for %q: %w", list.name, ErrNilAction)
	}
	return newProcessor(list, perItem(action), opts)
}

// Handle returns a handler that works list's due items on every
// passage-of-time event of type E it is given, for
// bus.Subscribe(b, handler): E is tick.MinuteHasPassed for timeouts,
// tick.DayHasPassed for daily checks, or tick.Event for every unit.
func Handle[E tick.Event](list *List, action Action, opts ...ProcessorOption) (func(context.Context, E) error, error) {
	p, err := NewProcessor(list, action, opts...)
	if err != nil {
		return nil, err
	}
	return Handler[E](p), nil
}

// perItem runs an [Action] for each item of a claimed batch.
type perItem Action

func (a perItem) process(ctx context.Context, p *Processor, start time.Time, res *Result) (bool, error) {
	return false, p.processClaimed(ctx, start, res, a.work)
}

func (perItem) concurrent() bool { return false }

// work runs the action for each item of a claimed batch, and returns the
// items that are done, for the caller to remove set-wise. It releases the
// conflicts in one statement and the items left unstarted in another;
// failures are written one by one, as each has its own attempt count.
func (a perItem) work(ctx context.Context, p *Processor, batch []claimed, done batchDone, start time.Time, res *Result) (_ batchDone, stopped bool, err error) {
	var conflicts, unstarted []claimed
	for i, it := range batch {
		if ctx.Err() != nil {
			return done, false, p.abandon(ctx, done, res, context.Cause(ctx))
		}
		started := res.Done + res.Failed + res.Parked + res.Conflicts
		if started > 0 && p.overTime(start) {
			unstarted = batch[i:]
			stopped = true
			break
		}
		now := p.cfg.clock.Now()
		if !done.lease.mayStart(now) {
			// The lease is lost, or too short for an action to finish
			// within it if renewals fail from now on: another processor
			// may take the rest soon, or already has. They are released
			// and the tick ends: renewals that fail or come late mean
			// the database or this process is in trouble, and a claim
			// lost to another processor would only be fought over again.
			// The next tick takes what is left.
			unstarted = batch[i:]
			stopped = true
			break
		}
		actErr := a.run(ctx, p, it.Item, now)
		if actErr == nil {
			p.succeeded(ctx, &done, it, res)
		}
		if ctx.Err() != nil {
			// A failure most likely came from the cancellation; counting
			// it as an attempt would punish the item.
			return done, false, p.abandon(ctx, done, res, context.Cause(ctx))
		}
		if err := p.outcome(ctx, &done, it, actErr, &conflicts, res); err != nil {
			return done, false, p.abandon(ctx, done, res, err)
		}
	}
	if err := p.release(ctx, done.token, conflicts, unstarted, res); err != nil {
		return done, false, p.abandon(ctx, done, res, err)
	}
	return done, stopped, nil
}

// run calls the action, starting at start, turning a panic into an
// error; it records the item's lateness and traces the action. The
// action's ctx tells [List.RemoveTx] which item it works.
func (a perItem) run(ctx context.Context, p *Processor, it Item, start time.Time) (err error) {
	l := p.list
	l.ins.late(ctx, it.Due, start)
	ctx, span := l.tr.startAction(ctx, it, start)
	if span != nil {
		// Deferred first, so that it sees a panic turned into err.
		defer func() { endAction(span, err, p.cfg.clock.Now()) }()
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrActionPanicked, r)
		}
	}()
	return a(context.WithValue(ctx, workingKey{}, working{list: l.name, id: it.ID}), it)
}
