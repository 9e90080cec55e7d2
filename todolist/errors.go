package todolist

import "errors"

// Sentinel errors. Every error the package returns for bad input wraps one of
// these with %w and names the offending value, so callers match with
// errors.Is and people read what went wrong.
var (
	// ErrInvalidName is returned by [Open] for a list name that is empty,
	// too long, not UTF-8 or contains control characters.
	ErrInvalidName = errors.New("todolist: invalid list name")
	// ErrInvalidID is returned for an empty item ID, one that is not UTF-8,
	// contains a NUL byte or is longer than [MaxIDLength].
	ErrInvalidID = errors.New("todolist: invalid item id")
	// ErrInvalidTime is returned for a zero time or one outside the range
	// the storage encoding holds (the years 1678–2262).
	ErrInvalidTime = errors.New("todolist: invalid time")
	// ErrInvalidLimit is returned for a read limit that is not positive.
	ErrInvalidLimit = errors.New("todolist: invalid limit")
	// ErrInvalidOption is returned by [Open], [NewProcessor] and [Handle]
	// for an option with an unusable value.
	ErrInvalidOption = errors.New("todolist: invalid option")
	// ErrNilAction is returned by [NewProcessor] and [Handle] without an
	// action to run.
	ErrNilAction = errors.New("todolist: action must not be nil")
	// ErrInvalidArgument is returned for a nil database, executor or bus
	// where one is needed.
	ErrInvalidArgument = errors.New("todolist: invalid argument")
	// ErrNilList is returned when a nil *List is passed where one is needed.
	ErrNilList = errors.New("todolist: list must not be nil")
	// ErrNotFound is returned by [List.Get] and [List.Reactivate] when the
	// list holds no item with the ID.
	ErrNotFound = errors.New("todolist: item not found")
	// ErrLeaseLost is wrapped by the error [Observer].LeaseLost is given
	// when a batch's lease ran out, or a renewal found its claim lapsed
	// or taken by another processor.
	ErrLeaseLost = errors.New("todolist: lease lost")
	// ErrActionPanicked wraps the value of a panic in an [Action] or a
	// [BatchAction]; the panic counts as a failed attempt like any other
	// error (of every item of the batch).
	ErrActionPanicked = errors.New("todolist: action panicked")
	// ErrBatchOutcomes is every item's failure when a [BatchAction]
	// returned a slice of outcomes whose length is not its batch's.
	ErrBatchOutcomes = errors.New("todolist: batch action returned the wrong number of outcomes")
)
