package ordering

import "context"

// SetBeforeDecide makes s's timeout handler call f after it loaded an order
// and before the order decides, on the first attempt, so tests can commit a
// payment exactly between the handler's load and its append. In a batch, f
// runs inside the batch's transaction: on PostgreSQL a payment can commit
// there, but nothing that waits for the order's to-do item (a completion,
// a cancellation) and, on SQLite, no write at all.
func SetBeforeDecide(s *System, f func(ctx context.Context, orderID string) error) {
	s.cancel.beforeDecide = f
}
