package todolist

import (
	"context"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/tick"
)

// BatchAction decides a claimed batch at once and returns one outcome per
// item, in the order given: nil (done), an error whose tree holds a
// Conflict() bool == true (re-evaluated next tick, no attempt counted), or
// another error (a failure: backoff, parked after the maximum attempts).
// Returning a non-nil error as the second value fails every item of the
// batch (e.g. the transaction could not commit).
//
// It is [Action] for many items at once, so that an action can load and
// decide many aggregates with a statement per batch rather than per item,
// and commit all their changes in one transaction: each outcome means
// exactly what an Action's error means for its item (see [Action] and the
// package documentation, Batches). The second value is every item's
// outcome, so the conflict rule applies to it too: a conflict there makes
// every item a conflict. A panic, or a slice whose length is not the
// batch's, is a failure of every item (the latter wraps
// [ErrBatchOutcomes]).
//
// items are the batch in the order it is worked: earliest due first, then
// by ID. ctx tells which items the action works, as an Action's does: a
// removal of any of them with [List.RemoveTx] under ctx, or a context
// derived from it, counts that item completed in the removal's
// transaction. Pass ctx on to whatever removes the items.
type BatchAction func(ctx context.Context, items []Item) ([]error, error)

// NewBatchProcessor returns a processor deciding the due items of list a
// claimed batch at a time with action, instead of an [Action] per item:
// claims, leases, the conflict rule, backoff and parking, totals and the
// [Observer] are those of [NewProcessor], whose defaults and options it
// takes ([WithBatchSize] bounds what one call of action decides).
func NewBatchProcessor(list *List, action BatchAction, opts ...ProcessorOption) (*Processor, error) {
	if list == nil {
		return nil, fmt.Errorf("todolist: new batch processor: %w", ErrNilList)
	}
	if action == nil {
		return nil, fmt.Errorf("todolist: new batch processor for %q: %w", list.name, ErrNilAction)
	}
	return newProcessor(list, perBatch(action), opts)
}

// perBatch runs a [BatchAction] for each claimed batch.
type perBatch BatchAction

func (a perBatch) process(ctx context.Context, p *Processor, start time.Time, res *Result) (bool, error) {
	return false, p.processClaimed(ctx, start, res, a.work)
}

func (perBatch) concurrent() bool { return false }

// HandleBatch is [Handle] for a [BatchAction]: it returns a handler that
// works list's due items, a batch per call of action, on every
// passage-of-time event of type E.
func HandleBatch[E tick.Event](list *List, action BatchAction, opts ...ProcessorOption) (func(context.Context, E) error, error) {
	p, err := NewBatchProcessor(list, action, opts...)
	if err != nil {
		return nil, err
	}
	return Handler[E](p), nil
}

// work is perItem.work for a batch action: the lease is checked once,
// before the batch starts (the time budget was, before it was claimed);
// then the action decides every item at once, and each outcome is written
// as an Action's is.
func (a perBatch) work(ctx context.Context, p *Processor, batch []claimed, done batchDone, _ time.Time, res *Result) (batchDone, bool, error) {
	if len(batch) == 0 {
		return done, false, nil
	}
	if ctx.Err() != nil {
		return done, false, p.abandon(ctx, done, res, context.Cause(ctx))
	}
	now := p.cfg.clock.Now()
	if !done.lease.mayStart(now) {
		// As work does for its next item: less than a third of the lease
		// left, so the batch is released for the next tick.
		if err := p.release(ctx, done.token, nil, batch, res); err != nil {
			return done, false, p.abandon(ctx, done, res, err)
		}
		return done, true, nil
	}
	outcomes, _ := p.decide(ctx, batch, now, nil, a)
	for i, it := range batch {
		if outcomes[i] == nil {
			p.succeeded(ctx, &done, it, res)
		}
	}
	if ctx.Err() != nil {
		// As for an Action: failures most likely came from the
		// cancellation, and are not counted.
		return done, false, p.abandon(ctx, done, res, context.Cause(ctx))
	}
	var conflicts []claimed
	for i, it := range batch {
		if err := p.outcome(ctx, &done, it, outcomes[i], &conflicts, res); err != nil {
			return done, false, p.abandon(ctx, done, res, err)
		}
	}
	if err := p.release(ctx, done.token, conflicts, nil, res); err != nil {
		return done, false, p.abandon(ctx, done, res, err)
	}
	return done, false, nil
}
