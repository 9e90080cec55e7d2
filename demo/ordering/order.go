package ordering

import (
	"fmt"
	"time"
)

// ReasonTimedOut is the reason an order cancelled because its payment
// deadline passed is recorded with.
const ReasonTimedOut = "timed out"

// Status is where an order stands.
type Status int

// The statuses of an order. Completed and Cancelled are closed: a closed order
// takes no further decision.
const (
	// StatusNone is an order never initiated: its stream has no events.
	StatusNone Status = iota
	// StatusAwaitingPayment is an initiated order not yet paid in full.
	StatusAwaitingPayment
	// StatusPaid is an order paid in full and not yet completed.
	StatusPaid
	// StatusCompleted is a paid order that was completed.
	StatusCompleted
	// StatusCancelled is an order that was cancelled.
	StatusCancelled
)

// String names the status.
func (s Status) String() string {
	switch s {
	case StatusNone:
		return "none"
	case StatusAwaitingPayment:
		return "awaiting payment"
	case StatusPaid:
		return "paid"
	case StatusCompleted:
		return "completed"
	case StatusCancelled:
		return "cancelled"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Order is the aggregate: the state an order's events fold into, and the
// decisions taken on it. It is a value; decisions do not change it but return
// the events that would, which the caller appends.
type Order struct {
	ID           string
	ClientID     string
	Items        []PricedItem
	Total        Money
	Paid         Money
	Status       Status
	InitiatedAt  time.Time
	TimeoutAfter time.Time
	// ClosedAt is when the order was completed or cancelled.
	ClosedAt time.Time
	// CancelReason is why a cancelled order was cancelled.
	CancelReason string
}

// Closed reports whether the order was completed or cancelled.
func (o Order) Closed() bool {
	return o.Status == StatusCompleted || o.Status == StatusCancelled
}

// Evolve returns the order after event. Events of other types are ignored, so
// a stream may carry more than order events.
func Evolve(o Order, event any) Order {
	switch e := event.(type) {
	case OrderInitiated:
		o = Order{
			ID: e.OrderID, ClientID: e.ClientID, Items: e.Items, Total: e.Total,
			Status: StatusAwaitingPayment, InitiatedAt: e.InitiatedAt, TimeoutAfter: e.TimeoutAfter,
		}
	case OrderPaymentRecorded:
		o.Paid += e.Amount
		if o.Status == StatusAwaitingPayment && o.Paid >= o.Total {
			o.Status = StatusPaid
		}
	case OrderCompleted:
		o.Status, o.ClosedAt = StatusCompleted, e.CompletedAt
	case OrderCancelled:
		o.Status, o.ClosedAt, o.CancelReason = StatusCancelled, e.CancelledAt, e.Reason
	}
	return o
}

// Fold returns the order the events describe, oldest first.
func Fold(events ...any) Order {
	var o Order
	for _, e := range events {
		o = Evolve(o, e)
	}
	return o
}

// Initiate decides the event that places an order: the cart's items are
// priced and totalled, and payment is due within timeout of now.
func Initiate(orderID, clientID string, items []PricedItem, now time.Time, timeout time.Duration) ([]any, error) {
	switch {
	case orderID == "":
		return nil, fmt.Errorf("%w: order ID is empty", ErrInvalidOrder)
	case clientID == "":
		return nil, fmt.Errorf("%w: order %s: client ID is empty", ErrInvalidOrder, orderID)
	case len(items) == 0:
		return nil, fmt.Errorf("%w: order %s: no items", ErrInvalidOrder, orderID)
	case timeout <= 0:
		return nil, fmt.Errorf("%w: order %s: timeout must be positive, got %v", ErrInvalidOrder, orderID, timeout)
	}
	var total Money
	for i, it := range items {
		switch {
		case it.ProductID == "":
			return nil, fmt.Errorf("%w: order %s: item %d has no product ID", ErrInvalidOrder, orderID, i)
		case it.Quantity <= 0:
			return nil, fmt.Errorf("%w: order %s: item %d (%s): quantity must be positive, got %d", ErrInvalidOrder, orderID, i, it.ProductID, it.Quantity)
		case it.UnitPrice < 0:
			return nil, fmt.Errorf("%w: order %s: item %d (%s): negative price %s", ErrInvalidOrder, orderID, i, it.ProductID, it.UnitPrice)
		}
		total += Money(it.Quantity) * it.UnitPrice
	}
	return []any{OrderInitiated{
		OrderID: orderID, ClientID: clientID, Items: append([]PricedItem(nil), items...), Total: total,
		InitiatedAt: now, TimeoutAfter: now.Add(timeout),
	}}, nil
}

// RecordPayment decides the event recording a payment of amount at at. The
// order must be open and the amount no more than what is left to pay.
func (o Order) RecordPayment(amount Money, at time.Time) ([]any, error) {
	if err := o.mustBeOpen("record a payment"); err != nil {
		return nil, err
	}
	if left := o.Total - o.Paid; amount <= 0 || amount > left {
		return nil, fmt.Errorf("%w: order %s: payment of %s, %s left to pay", ErrInvalidPayment, o.ID, amount, left)
	}
	return []any{OrderPaymentRecorded{OrderID: o.ID, Amount: amount, RecordedAt: at}}, nil
}

// Complete decides the event completing a paid order. Completing a completed
// order decides nothing, so a repeated command is harmless.
func (o Order) Complete(at time.Time) ([]any, error) {
	if o.Status == StatusCompleted {
		return nil, nil
	}
	if err := o.mustBeOpen("complete"); err != nil {
		return nil, err
	}
	if o.Status != StatusPaid {
		return nil, fmt.Errorf("%w: order %s: %s of %s paid", ErrNotPaid, o.ID, o.Paid, o.Total)
	}
	return []any{OrderCompleted{OrderID: o.ID, CompletedAt: at}}, nil
}

// Cancel decides the event cancelling the order for reason. It decides
// nothing when the order is already closed (or was never initiated): there
// is nothing left to cancel, which is not an error. A paid order is not
// cancelled: the client did their part, and taking the money back is a
// refund, which this example leaves out; Cancel fails with [ErrOrderPaid].
// An order paid in part can be cancelled.
func (o Order) Cancel(reason string, at time.Time) ([]any, error) {
	if o.Status == StatusPaid {
		return nil, fmt.Errorf("%w: order %s: %s paid, refund it before cancelling", ErrOrderPaid, o.ID, o.Paid)
	}
	if o.Status == StatusNone || o.Closed() {
		return nil, nil
	}
	return o.cancelled(reason, at), nil
}

// TimeOut decides what happens when the order's payment deadline has passed
// at at: an order still awaiting payment is cancelled with [ReasonTimedOut];
// a paid or closed order decides nothing. A deadline not yet reached
// decides nothing either, so a tick that comes early cannot cancel.
func (o Order) TimeOut(at time.Time) []any {
	if o.Status != StatusAwaitingPayment || at.Before(o.TimeoutAfter) {
		return nil
	}
	return o.cancelled(ReasonTimedOut, at)
}

func (o Order) cancelled(reason string, at time.Time) []any {
	return []any{OrderCancelled{OrderID: o.ID, Reason: reason, CancelledAt: at}}
}

func (o Order) mustBeOpen(doing string) error {
	switch o.Status {
	case StatusNone:
		return fmt.Errorf("%w: cannot %s", ErrOrderNotFound, doing)
	case StatusCompleted, StatusCancelled:
		return fmt.Errorf("%w: order %s is %s, cannot %s", ErrOrderClosed, o.ID, o.Status, doing)
	}
	return nil
}
