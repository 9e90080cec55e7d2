package ordering

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/todolist"
)

// DefaultListName is the name of the PendingOrders to-do list.
const DefaultListName = "pending-orders"

// NewPendingOrders returns the projection keeping list (PendingOrders) up to
// date: an initiated order is added, due at its payment deadline; a completed
// or cancelled one is removed. A paid order stays until it is completed, and
// its timeout then decides nothing.
func NewPendingOrders(list *todolist.List) *todolist.Projection {
	p := todolist.NewProjection(list)
	todolist.AddOn(p, func(e OrderInitiated) (string, time.Time) { return e.OrderID, e.TimeoutAfter })
	todolist.RemoveOn(p, func(e OrderCompleted) string { return e.OrderID })
	todolist.RemoveOn(p, func(e OrderCancelled) string { return e.OrderID })
	return p
}

// InTransaction returns an event store hook applying p to every append, in
// the append's transaction: the to-do list commits or rolls back with the
// events it is built from (pass it to eventstore.WithInTransaction).
func InTransaction(p *todolist.Projection) eventstore.TxHook {
	return func(ctx context.Context, tx sqlx.ExtContext, recorded []eventstore.Recorded) error {
		events := make([]any, len(recorded))
		for i, r := range recorded {
			events[i] = r.Event
		}
		if d, ok := ctx.Value(deferredKey{}).(*deferred); ok {
			d.add(p, events)
			return nil
		}
		return p.Apply(ctx, tx, events...)
	}
}

// deferred collects the events the [InTransaction] hooks are handed during
// an append of many streams (the event store calls them once per stream),
// so that each projection applies them all at once before the commit: a
// statement per run of removals instead of one per order.
type deferred struct {
	projections []*todolist.Projection
	events      [][]any
}

type deferredKey struct{}

// withDeferred returns a ctx under which InTransaction hooks hand their
// events to d instead of applying them; the caller must d.apply them in
// the same transaction before it commits.
func withDeferred(ctx context.Context, d *deferred) context.Context {
	return context.WithValue(ctx, deferredKey{}, d)
}

func (d *deferred) add(p *todolist.Projection, events []any) {
	for i, q := range d.projections {
		if q == p {
			d.events[i] = append(d.events[i], events...)
			return
		}
	}
	d.projections = append(d.projections, p)
	d.events = append(d.events, events)
}

// apply applies what was collected, each projection's events in the order
// they were appended, on tx.
func (d *deferred) apply(ctx context.Context, tx sqlx.ExtContext) error {
	for i, p := range d.projections {
		if err := p.Apply(ctx, tx, d.events[i]...); err != nil {
			return err
		}
	}
	return nil
}
