package ordering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// conflictRetries is how many times a cancellation that lost its append to a
// concurrent writer (a payment, a completion) reloads the order and decides
// again in the same tick. Usually one reload finds the order paid or closed
// and decides nothing; if the order keeps changing, the conflict goes back to
// the to-do list, which tries the order again at the next tick.
const conflictRetries = 3

// HandleCancelOrder returns the handler to subscribe to tick.MinuteHasPassed
// (bus.Subscribe(b, handler)): at every minute it takes the orders of
// pending (PendingOrders) whose deadline has passed and times each out
// through the aggregate, appending the cancellation to store with the
// version it loaded. Orders paid or closed meanwhile decide nothing and leave
// the list; a version conflict is not a failure. clock stamps the
// cancellations and drives the processor; opts tune it (batch size, lease,
// observer).
func HandleCancelOrder(store *eventstore.Store, pending *todolist.List, clock clockwork.Clock, opts ...todolist.ProcessorOption) (func(context.Context, tick.MinuteHasPassed) error, error) {
	c, err := newCanceller(store, clock, &unpublished{logger: slog.Default()})
	if err != nil {
		return nil, err
	}
	return c.handler(pending, opts...)
}

// canceller times out due orders and counts what it did.
type canceller struct {
	store *eventstore.Store
	clock clockwork.Clock

	timedOut  atomic.Int64 // orders cancelled with ReasonTimedOut
	untouched atomic.Int64 // due orders that decided nothing (paid or closed)
	conflicts atomic.Int64 // appends lost to a concurrent writer
	// unpublished counts and logs cancellations committed whose publishing
	// failed; they stand, but bus subscribers did not hear of them.
	unpublished *unpublished

	// beforeDecide, when set, runs for one order at a time: in cancel
	// after the order was loaded and before it decides, on the first
	// attempt only, so that tests and the demo land a payment exactly
	// between the load and the append; in cancelBatch before the batch
	// takes the orders' turns, at every attempt, so that tests hold or
	// let go of a turn the batch then finds busy or free (from the load
	// to the append no writer gets in there).
	beforeDecide func(ctx context.Context, orderID string) error
}

func newCanceller(store *eventstore.Store, clock clockwork.Clock, unpublished *unpublished) (*canceller, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: event store must not be nil", ErrInvalidConfig)
	}
	if clock == nil {
		return nil, fmt.Errorf("%w: clock must not be nil", ErrInvalidConfig)
	}
	return &canceller{store: store, clock: clock, unpublished: unpublished}, nil
}

// HandleCancelOrders is [HandleCancelOrder] deciding due orders a batch
// at a time, each batch in one transaction (a todolist.TxBatchAction):
// the transaction that takes the batch from pending takes its orders'
// turns and loads them (eventstore's TakeTurnsTx), lets each decide as it
// would alone, appends all the cancellations, each order's with the
// version it loaded (Turns.AppendMany), applies the removals from the list
// that [NewPendingOrders] derives from them, when the store applies it in
// its append transaction through [InTransaction], in a statement or two,
// and records the batch's outcomes: one commit a batch, and the
// cancellations and the list's removals commit together or not at all.
// The cancellations are published once that commit is done; a batch
// whose transaction fails publishes nothing, and its orders stay due.
//
// The turns are taken before the load, so no writer that takes its turn
// comes between an order's load and its cancellation, on either backend:
// a payment made meanwhile waits for the batch, and finds the order
// cancelled (on SQLite the transaction's write lock does the same). An
// order whose stream another writer is appending to when the batch takes
// the turns is not waited for — that writer may be waiting for the
// order's to-do item, which the batch holds — but left for a moment and
// tried again, with the others that conflicted, up to three times in the
// tick, then left to the next tick; the rest of the batch goes ahead.
// It is what a [System] uses unless Config.PerOrderTimeouts is set.
func HandleCancelOrders(store *eventstore.Store, pending *todolist.List, clock clockwork.Clock, opts ...todolist.ProcessorOption) (func(context.Context, tick.MinuteHasPassed) error, error) {
	c, err := newCanceller(store, clock, &unpublished{logger: slog.Default()})
	if err != nil {
		return nil, err
	}
	return c.batchHandler(pending, opts...)
}

func (c *canceller) handler(pending *todolist.List, opts ...todolist.ProcessorOption) (func(context.Context, tick.MinuteHasPassed) error, error) {
	opts = append([]todolist.ProcessorOption{todolist.WithClock(c.clock)}, opts...)
	h, err := todolist.Handle[tick.MinuteHasPassed](pending, c.cancel, opts...)
	if err != nil {
		return nil, fmt.Errorf("ordering: cancel-order handler: %w", err)
	}
	return h, nil
}

func (c *canceller) batchHandler(pending *todolist.List, opts ...todolist.ProcessorOption) (func(context.Context, tick.MinuteHasPassed) error, error) {
	opts = append([]todolist.ProcessorOption{todolist.WithClock(c.clock)}, opts...)
	// The orders' store is on the list's database: the cancellations and
	// the list's removals are written in the transaction of the batch.
	h, err := todolist.HandleTxBatch[tick.MinuteHasPassed](pending, c.cancelBatch, opts...)
	if err != nil {
		return nil, fmt.Errorf("ordering: cancel-orders handler: %w", err)
	}
	return h, nil
}

// cancel is the to-do list action for one due order.
func (c *canceller) cancel(ctx context.Context, item todolist.Item) error {
	first := true
	decide := func(o Order) ([]any, error) {
		if first && c.beforeDecide != nil {
			first = false
			if err := c.beforeDecide(ctx, item.ID); err != nil {
				return nil, err
			}
		}
		return o.TimeOut(c.clock.Now()), nil
	}
	res, err := eventstore.Update(ctx, c.store, StreamOf(item.ID), Order{}, Evolve, decide, eventstore.WithRetries(conflictRetries))
	lost := int64(res.Attempts - 1)
	if errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		lost++
	}
	c.conflicts.Add(lost)
	if err != nil && !errors.Is(err, eventstore.ErrPublish) {
		return fmt.Errorf("ordering: time out order %s: %w", item.ID, err)
	}
	if len(res.Recorded) == 0 {
		c.untouched.Add(1)
		return nil
	}
	c.timedOut.Add(1)
	// The cancellation and the list update committed together; only the
	// bus may have missed it. Retrying would decide nothing, so count it
	// instead of failing the item.
	c.unpublished.check(ctx, err, slog.String("command", "time out"), slog.String("order", item.ID))
	return nil
}

// cancelBatch is the to-do list batch action for a batch of due orders,
// in tx, the batch's transaction: take their turns and load them all, let
// each decide, append every cancellation; take, reload and decide again
// the orders whose stream was busy or whose append conflicted, up to
// conflictRetries times; then apply the list's removals, and leave
// publishing and counting to after the commit.
func (c *canceller) cancelBatch(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
	outcomes := make([]error, len(items))
	left := make([]int, len(items)) // the items still to decide
	for i := range left {
		left[i] = i
	}
	// What the batch did, counted and published once it is committed.
	var timedOut, untouched, conflicts int64
	var published []eventstore.AppendOutcome
	d := &deferred{}
	for attempt := 1; len(left) > 0; attempt++ {
		if c.beforeDecide != nil {
			kept := left[:0]
			for _, i := range left {
				if err := c.beforeDecide(ctx, items[i].ID); err != nil {
					outcomes[i] = fmt.Errorf("ordering: time out order %s: %w", items[i].ID, err)
					continue
				}
				kept = append(kept, i)
			}
			left = kept
		}
		streams := make([]string, len(left))
		for j, i := range left {
			streams[j] = StreamOf(items[i].ID)
		}
		// The turns first, then the orders, in tx: what is loaded stays
		// where the orders stand until the batch appends, so the append
		// reads no version again. An order whose stream another writer
		// holds is left for later rather than waited for: that writer
		// may be waiting for the order's to-do item, which tx holds —
		// completing or cancelling the order removes it — and waiting
		// for it would be a deadlock. In tx: reading on another
		// connection would need one more from the pool, which may have
		// none to give while tx holds one.
		turns, err := c.store.TakeTurnsTx(ctx, tx, streams)
		if err != nil {
			return nil, fmt.Errorf("ordering: time out %d orders: %w", len(left), err)
		}
		isBusy := make(map[string]bool, len(turns.Busy()))
		for _, stream := range turns.Busy() {
			isBusy[stream] = true
		}
		now := c.clock.Now()
		batch := make([]eventstore.StreamAppend, 0, len(left))
		deciding := make([]int, 0, len(left)) // the item of each entry of batch
		var busy []int
		for j, i := range left {
			if isBusy[streams[j]] {
				busy = append(busy, i)
				continue
			}
			var o Order
			var version int64
			for _, r := range turns.Events(streams[j]) {
				o, version = Evolve(o, r.Event), r.Version
			}
			events := o.TimeOut(now)
			if len(events) == 0 {
				untouched++
				continue
			}
			batch = append(batch, eventstore.StreamAppend{Stream: streams[j], Expected: eventstore.Exact(version), Events: events})
			deciding = append(deciding, i)
		}
		if len(batch) == 0 && len(busy) == 0 {
			break
		}
		appended, err := turns.AppendMany(withDeferred(ctx, d), batch)
		if err != nil {
			return nil, fmt.Errorf("ordering: time out %d orders: %w", len(batch), err)
		}
		left = left[:0]
		retry := attempt <= conflictRetries && ctx.Err() == nil
		for j, o := range appended {
			i := deciding[j]
			switch {
			case o.Conflict == nil:
				timedOut++
				published = append(published, o)
			case retry:
				conflicts++
				left = append(left, i)
			default:
				conflicts++
				outcomes[i] = fmt.Errorf("ordering: time out order %s: gave up after %d attempts: %w", items[i].ID, attempt, o.Conflict)
			}
		}
		for _, i := range busy {
			conflicts++
			if retry {
				left = append(left, i)
			} else {
				outcomes[i] = fmt.Errorf("ordering: time out order %s: gave up after %d attempts: %w", items[i].ID, attempt, busyError{order: items[i].ID})
			}
		}
		if len(busy) > 0 && len(left) > 0 {
			// Give the writers a moment to commit; one waiting for
			// this batch commits only after it, at the next tick.
			if err := pause(ctx, time.Millisecond<<(attempt-1)); err != nil {
				return nil, err
			}
		}
	}
	// The projections' removals, together: a statement or two for the
	// batch rather than one per order.
	if err := d.apply(ctx, tx); err != nil {
		return nil, fmt.Errorf("ordering: time out %d orders: %w", len(published), err)
	}
	todolist.AfterCommit(ctx, func(ctx context.Context) {
		c.timedOut.Add(timedOut)
		c.untouched.Add(untouched)
		c.conflicts.Add(conflicts)
		for _, o := range published {
			// The cancellation and the list update committed together;
			// only the bus may have missed it. Retrying would decide
			// nothing, so count it instead of failing the item.
			recorded := o.Result.Recorded
			c.unpublished.check(ctx, c.store.Publish(ctx, recorded), slog.String("command", "time out"), slog.String("order", strings.TrimPrefix(recorded[0].Stream, streamPrefix)))
		}
	})
	return outcomes, nil
}

// busyError is an order whose stream another writer was appending to at
// every attempt of a batch. It is a conflict: the order is tried again at
// the next tick, without counting a failed attempt.
type busyError struct{ order string }

func (e busyError) Error() string {
	return "another writer is changing order " + e.order
}

// Conflict reports true: see todolist's Conflicts.
func (busyError) Conflict() bool { return true }

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
