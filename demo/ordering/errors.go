package ordering

import "errors"

// Sentinel errors. Commands wrap them with %w and name the order, so callers
// match with errors.Is and people read what went wrong.
var (
	// ErrInvalidOrder is returned by [Initiate] for an order that cannot be
	// placed: no ID or client, no items, an item without product, quantity
	// or with a negative price, or a timeout that is not positive.
	ErrInvalidOrder = errors.New("ordering: invalid order")
	// ErrOrderNotFound is returned by commands on an order that was never
	// initiated.
	ErrOrderNotFound = errors.New("ordering: order not found")
	// ErrOrderClosed is returned when a payment or a completion arrives for
	// an order that was cancelled, or a payment for a completed one.
	ErrOrderClosed = errors.New("ordering: order is closed")
	// ErrInvalidPayment is returned for a payment that is not positive or
	// exceeds what is left to pay.
	ErrInvalidPayment = errors.New("ordering: invalid payment")
	// ErrOrderPaid is returned when cancelling an order paid in full: it
	// must be refunded first, which this example does not do.
	ErrOrderPaid = errors.New("ordering: order is paid")
	// ErrNotPaid is returned when completing an order not yet paid in full.
	ErrNotPaid = errors.New("ordering: order is not paid in full")
	// ErrInvalidConfig is returned by [Open] and [RunDemo] for an unusable
	// configuration value.
	ErrInvalidConfig = errors.New("ordering: invalid configuration")
)
