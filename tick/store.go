package tick

import (
	"context"
	"time"
)

// CursorStore keeps, per unit, the last boundary a ticker dealt with, and the
// lease that lets one replica among many emit. Implementations are safe for
// concurrent use by several tickers, in one process (MemoryStore) or many
// (SQLStore). Instants are compared exactly; implementations may return them
// in any location.
type CursorStore interface {
	// Cursor returns unit's cursor, or the zero time when the unit has none
	// yet.
	Cursor(ctx context.Context, unit Unit) (time.Time, error)

	// Advance moves unit's cursor from from (zero: the unit has no cursor)
	// to to, atomically, only if it still stands on from — otherwise
	// ErrCursorMoved — and, when term is not zero, only if term is still the
	// lease's fencing term — otherwise ErrLeaseLost.
	Advance(ctx context.Context, unit Unit, from, to time.Time, term int64) error

	// AcquireLease gives holder the lease until now+ttl when it is free,
	// expired or already holder's, and returns the lease as it stands
	// afterwards: the caller holds it when the returned Holder is its own.
	// The fencing term grows by one each time the lease changes hands and
	// stays the same when the holder renews.
	AcquireLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (Lease, error)

	// ReleaseLease gives the lease up when holder still holds it at term,
	// so that the next AcquireLease by anyone takes it at once, with a new
	// term. When the lease has changed hands meanwhile it does nothing and
	// returns nil: a stale holder cannot release its successor's lease.
	ReleaseLease(ctx context.Context, holder string, term int64) error
}

// Lease is the right to emit among replicas sharing a store.
type Lease struct {
	// Holder identifies the replica holding the lease (WithLease).
	Holder string
	// Term is the fencing term, which grows each time the lease changes
	// hands; a cursor write carrying an older term is refused.
	Term int64
	// Expires is when the lease lapses unless renewed.
	Expires time.Time
}
