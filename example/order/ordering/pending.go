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
		return p.Apply(ctx, tx, events...)
	}
}
