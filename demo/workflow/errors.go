package workflow

import "errors"

// Sentinel errors, wrapped with %w and the order's id.
var (
	// ErrNotPaid is what the workflow returns when no payment came within
	// PaymentTimeout: its compensation releases the stock and the instance
	// ends Failed with this error's text (see NotPaid).
	ErrNotPaid = errors.New("workflow: order not paid in time")
	// ErrOutOfStock is returned by Warehouse.Reserve when a product is
	// short; the reserve step fails at once (it is not retried).
	ErrOutOfStock = errors.New("workflow: out of stock")
	// ErrInvalidOrder is returned by Place for an order without an id,
	// items, positive quantities or a positive amount.
	ErrInvalidOrder = errors.New("workflow: invalid order")
	// ErrNothingReserved is returned by Warehouse.Ship for an order whose
	// stock is not held.
	ErrNothingReserved = errors.New("workflow: nothing reserved")
)
