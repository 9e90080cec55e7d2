package ordering

import (
	"fmt"
	"time"

	"github.com/passage-of-time/passage/eventstore"
)

// Money is an amount in cents, so totals add up exactly.
type Money int64

// String formats m as units and cents, such as "12.50".
func (m Money) String() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Sprintf("%s%d.%02d", sign, m/100, m%100)
}

// PricedItem is one line of a confirmed cart, priced when the order was
// initiated so later price changes do not alter it.
type PricedItem struct {
	ProductID string
	Quantity  int
	UnitPrice Money
}

// OrderInitiated is recorded when a client confirms a cart: the order now
// waits for payment until TimeoutAfter.
type OrderInitiated struct {
	OrderID      string
	ClientID     string
	Items        []PricedItem
	Total        Money
	InitiatedAt  time.Time
	TimeoutAfter time.Time
}

// OrderPaymentRecorded is recorded for each payment towards an order.
type OrderPaymentRecorded struct {
	OrderID    string
	Amount     Money
	RecordedAt time.Time
}

// OrderCompleted is recorded when a paid order is completed; it closes the
// order.
type OrderCompleted struct {
	OrderID     string
	CompletedAt time.Time
}

// OrderCancelled is recorded when an order is cancelled, by a client or
// because its payment deadline passed (Reason [ReasonTimedOut]); it closes
// the order.
type OrderCancelled struct {
	OrderID     string
	Reason      string
	CancelledAt time.Time
}

// The names the events are stored under. They are data in the event store:
// keep them when the Go types are renamed.
const (
	EventOrderInitiated       = "order.initiated"
	EventOrderPaymentRecorded = "order.payment-recorded"
	EventOrderCompleted       = "order.completed"
	EventOrderCancelled       = "order.cancelled"
)

// Register records the order events in r under their stable names, for a
// store that holds orders.
func Register(r *eventstore.Registry) error {
	for _, err := range []error{
		eventstore.Register[OrderInitiated](r, EventOrderInitiated),
		eventstore.Register[OrderPaymentRecorded](r, EventOrderPaymentRecorded),
		eventstore.Register[OrderCompleted](r, EventOrderCompleted),
		eventstore.Register[OrderCancelled](r, EventOrderCancelled),
	} {
		if err != nil {
			return fmt.Errorf("ordering: register order events: %w", err)
		}
	}
	return nil
}

// StreamOf returns the name of the event stream holding the order with id.
func StreamOf(orderID string) string {
	return streamPrefix + orderID
}

// streamPrefix begins the name of every order's stream.
const streamPrefix = "order-"
