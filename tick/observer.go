package tick

import (
	"sync/atomic"
	"time"
)

// Observer receives what a Ticker does, for anything the package's own
// metrics (WithMeterProvider) do not cover; nil fields are not called. Callbacks run on the emitting goroutine, one at a time per
// ticker, and must be quick.
type Observer struct {
	// Emitted is called after each event was published; lag is EmittedAt
	// minus the boundary, by the ticker's clock.
	Emitted func(e Event, lag time.Duration)
	// Skipped is called after a TicksSkipped report was published.
	Skipped func(s TicksSkipped)
	// PublishFailed is called when publishing a boundary (or a skip report)
	// failed; the boundary is retried after the retry backoff
	// (WithRetryBackoff) or at the next boundary, whichever comes first.
	PublishFailed func(unit Unit, boundary time.Time, err error)
	// StoreFailed is called when a call to the CursorStore failed (reading
	// a cursor, writing one, taking or releasing the lease). The refusals
	// that are the store doing its job — ErrCursorMoved and ErrLeaseLost —
	// are not failures and are not reported here.
	StoreFailed func(err error)
	// LeaseTaken is called when a pass takes the lease at a term this
	// ticker did not hold at its previous pass: its first, or one after
	// it waited as a standby or lost the lease (WithLease only).
	LeaseTaken func(t LeaseTake)
	// LeaseLost is called when a pass loses the lease it held, as
	// LastLeaseLoss then reports it.
	LeaseLost func(l LeaseLoss)
}

// LeaseTake is a lease taken by a pass (Observer.LeaseTaken).
type LeaseTake struct {
	// Term is the lease's new fencing term.
	Term int64
	// At is when the pass took it, by the ticker's clock.
	At time.Time
	// From is the holder this ticker last found holding the lease while
	// it stood by, or "" when it saw none: a first take, or one right
	// after it lost the lease itself.
	From string
}

// Stats are a Ticker's running totals since New.
type Stats struct {
	// Emitted counts published events.
	Emitted int64
	// Skipped counts boundaries reported in TicksSkipped events.
	Skipped int64
	// PublishFailures counts failed publish calls.
	PublishFailures int64
	// StoreFailures counts failed CursorStore calls (see Observer.StoreFailed).
	StoreFailures int64
	// Passes counts completed emission passes (wake-ups, EmitDue, EmitUntil).
	Passes int64
}

type counters struct {
	emitted, skipped, failures, storeFailures, passes atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Emitted:         c.emitted.Load(),
		Skipped:         c.skipped.Load(),
		PublishFailures: c.failures.Load(),
		StoreFailures:   c.storeFailures.Load(),
		Passes:          c.passes.Load(),
	}
}
