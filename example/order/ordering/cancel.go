package ordering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

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

func (c *canceller) handler(pending *todolist.List, opts ...todolist.ProcessorOption) (func(context.Context, tick.MinuteHasPassed) error, error) {
	opts = append([]todolist.ProcessorOption{todolist.WithClock(c.clock)}, opts...)
	h, err := todolist.Handle[tick.MinuteHasPassed](pending, c.cancel, opts...)
	if err != nil {
		return nil, fmt.Errorf("ordering: cancel-order handler: %w", err)
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
