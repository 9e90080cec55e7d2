package tick

import "errors"

var (
	// ErrUnknownUnit is returned for a unit that is not one of Units().
	ErrUnknownUnit = errors.New("tick: unknown unit")
	// ErrInvalidOption is returned by New when an option's value is unusable;
	// the message names the option and the value.
	ErrInvalidOption = errors.New("tick: invalid option")
	// ErrCursorMoved is returned by CursorStore.Advance when the stored
	// cursor is no longer where the caller last saw it: another emitter
	// advanced it first.
	ErrCursorMoved = errors.New("tick: cursor moved")
	// ErrLeaseLost is returned by CursorStore.Advance when the caller's
	// fencing term is no longer the lease's: another replica took over, so
	// the stale holder's write is refused instead of double-emitting.
	ErrLeaseLost = errors.New("tick: lease lost")
	// ErrNotLeader is returned by EmitDue and EmitUntil when another replica
	// holds a live lease; only the holder emits.
	ErrNotLeader = errors.New("tick: another replica holds the lease")
	// ErrFuture is returned by EmitUntil for an instant after the clock's now:
	// boundaries that have not passed cannot be emitted.
	ErrFuture = errors.New("tick: instant is in the future")
	// ErrNothingToBackfill is returned by EmitUntil when no unit had a
	// boundary to emit before the given instant: it is the zero time,
	// every cursor is already there or later, or a unit has no cursor yet
	// (a backfill starts from the cursor a running ticker recorded). The
	// message names each unit's cursor. Nothing was published and no
	// cursor was moved, so a caller may treat it as a no-op.
	ErrNothingToBackfill = errors.New("tick: nothing to backfill")
	// ErrAlreadyStarted is returned by Start on a running Ticker.
	ErrAlreadyStarted = errors.New("tick: ticker already started")
	// ErrUnhealthy is wrapped by Health while emission fails: the last
	// pass ended with a publish or store error.
	ErrUnhealthy = errors.New("tick: emission failing")
	// ErrWrongClock is returned by AdvanceAndWait for a ticker that does
	// not run on the fake clock it was given: advancing that clock would
	// never wake the ticker.
	ErrWrongClock = errors.New("tick: ticker runs on another clock")
	// ErrNotRunning is returned by AdvanceAndWait for a Ticker that is not
	// started or has stopped.
	ErrNotRunning = errors.New("tick: ticker is not running")
)
