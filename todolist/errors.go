package todolist

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

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

// ErrInvalidCursor is returned by [ParseCursor] for text that is not a
// cursor [Cursor.String] wrote.
var ErrInvalidCursor = errors.New("todolist: invalid page cursor")

// invalid is the error of an option given an unusable value: it wraps
// [ErrInvalidOption] and names the option, as in "todolist: invalid
// option WithBatchSize: batch size 0, want 1–10000", so that whoever reads
// it knows which of a constructor's options to mend.
func invalid(option, format string, args ...any) error {
	return fmt.Errorf("%w %s: "+format, append([]any{ErrInvalidOption, option}, args...)...)
}

// isConflict reports whether any error in err's tree — err itself, what
// it wraps, and every branch of a join, all the way down — has a method
// Conflict() bool that returns true. errors.As would stop at the first
// value with the method, so a Conflict() false beside or above a real
// conflict would hide it.
func isConflict(err error) bool {
	if c, ok := err.(interface{ Conflict() bool }); ok && c.Conflict() {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return isConflict(inner)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if inner != nil && isConflict(inner) {
				return true
			}
		}
	}
	return false
}

// maxErrorLength bounds the stored text of a failure: an error is for a
// person to read, and some errors carry whole responses.
const maxErrorLength = 2000

func errorText(err error) string {
	s := strings.ToValidUTF8(strings.ReplaceAll(err.Error(), "\x00", ""), "\uFFFD")
	if len(s) <= maxErrorLength {
		return s
	}
	cut := maxErrorLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
