package ordering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

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

	// beforeDecide, when set, runs after the order was loaded and before
	// it decides, on the first attempt only: tests and the demo use it to
	// land a payment exactly between the load and the append.
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

// HandleCancelOrders is [HandleCancelOrder] deciding a claimed batch of
// due orders at once (a todolist.BatchAction): the batch's orders are
// loaded in one query, each decides as it would alone, and all the
// cancellations are appended in one transaction, each order's with the
// version it loaded (eventstore's AppendManyTx). A version conflict on
// one order fails none of the others: only the orders that conflicted are
// reloaded and decided again, up to three times in the tick, then left to
// the next tick. Where the store applies [NewPendingOrders] in its append
// transaction through [InTransaction], the batch's removals from the
// list are written together, in a statement or two, before the commit.
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
	// the list's removals commit together.
	db := pending.DB()
	h, err := todolist.HandleBatch[tick.MinuteHasPassed](pending, func(ctx context.Context, items []todolist.Item) ([]error, error) {
		return c.cancelBatch(ctx, db, items)
	}, opts...)
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

// cancelBatch is the to-do list batch action for a batch of due orders:
// load them all, let each decide, append every cancellation in one
// transaction; reload and decide again the orders whose append conflicted,
// up to conflictRetries times.
func (c *canceller) cancelBatch(ctx context.Context, db *sqlx.DB, items []todolist.Item) ([]error, error) {
	outcomes := make([]error, len(items))
	left := make([]int, len(items)) // the items still to decide
	for i := range left {
		left[i] = i
	}
	for attempt := 1; len(left) > 0; attempt++ {
		streams := make([]string, len(left))
		for j, i := range left {
			streams[j] = StreamOf(items[i].ID)
		}
		loaded, err := c.store.LoadMany(ctx, streams)
		if err != nil {
			return nil, fmt.Errorf("ordering: time out %d orders: %w", len(left), err)
		}
		now := c.clock.Now()
		batch := make([]eventstore.StreamAppend, 0, len(left))
		deciding := make([]int, 0, len(left)) // the item of each entry of batch
		for j, i := range left {
			var o Order
			var version int64
			for _, r := range loaded[streams[j]] {
				o, version = Evolve(o, r.Event), r.Version
			}
			if attempt == 1 && c.beforeDecide != nil {
				if err := c.beforeDecide(ctx, items[i].ID); err != nil {
					outcomes[i] = fmt.Errorf("ordering: time out order %s: %w", items[i].ID, err)
					continue
				}
			}
			events := o.TimeOut(now)
			if len(events) == 0 {
				c.untouched.Add(1)
				continue
			}
			batch = append(batch, eventstore.StreamAppend{Stream: streams[j], Expected: eventstore.Exact(version), Events: events})
			deciding = append(deciding, i)
		}
		if len(batch) == 0 {
			break
		}
		appended, err := c.appendBatch(ctx, db, batch)
		if err != nil {
			return nil, fmt.Errorf("ordering: time out %d orders: %w", len(batch), err)
		}
		left = left[:0]
		for j, o := range appended {
			i := deciding[j]
			switch {
			case o.Conflict == nil:
				c.timedOut.Add(1)
			case attempt <= conflictRetries && ctx.Err() == nil:
				c.conflicts.Add(1)
				left = append(left, i)
			default:
				c.conflicts.Add(1)
				outcomes[i] = fmt.Errorf("ordering: time out order %s: gave up after %d attempts: %w", items[i].ID, attempt, o.Conflict)
			}
		}
	}
	return outcomes, nil
}

// appendBatch appends batch in one transaction, each entry with its own
// expected version, and publishes what it appended once committed. The
// projections of an [InTransaction] hook are applied once for the whole
// batch, before the commit, rather than once per order.
func (c *canceller) appendBatch(ctx context.Context, db *sqlx.DB, batch []eventstore.StreamAppend) ([]eventstore.AppendOutcome, error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	d := &deferred{}
	outcomes, err := c.store.AppendManyTx(withDeferred(ctx, d), tx, batch)
	if err != nil {
		return nil, err
	}
	if err := d.apply(ctx, tx); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	for j, o := range outcomes {
		if o.Conflict == nil {
			// The cancellation and the list update committed together;
			// only the bus may have missed it. Retrying would decide
			// nothing, so count it instead of failing the item.
			c.unpublished.check(ctx, c.store.Publish(ctx, o.Result.Recorded), slog.String("command", "time out"), slog.String("order", strings.TrimPrefix(batch[j].Stream, streamPrefix)))
		}
	}
	return outcomes, nil
}
