package eventstore

import (
	"errors"
	"fmt"
	"runtime/debug"
)

var (
	// ErrWrongExpectedVersion matches (with errors.Is) every
	// [*VersionConflictError]: the stream was not where the appender
	// expected it, because another writer got there first or the caller's
	// assumption was wrong. Reload and decide again.
	ErrWrongExpectedVersion = errors.New("eventstore: wrong expected version")

	// ErrUnknownEventType is returned when a stored event's type name is not
	// in the store's [Registry]: the stream cannot be decoded by this
	// program. Register the type (or an evolved version of it) under that
	// name.
	ErrUnknownEventType = errors.New("eventstore: unknown event type")

	// ErrUnregisteredType is returned when an appended value's Go type was
	// never registered, so the store has no name to record it under.
	ErrUnregisteredType = errors.New("eventstore: unregistered Go type")

	// ErrInvalidRegistration is returned by [Register] for an empty name, a
	// name or Go type already registered, or a type that cannot be an event
	// (pointer, interface).
	ErrInvalidRegistration = errors.New("eventstore: invalid registration")

	// ErrInvalidArgument is returned for bad input to the store: an empty
	// stream name, a nil event, a negative version, a nil option value.
	ErrInvalidArgument = errors.New("eventstore: invalid argument")

	// ErrPublish is returned when the events were committed but handing them
	// to the [Publisher] failed. The append itself succeeded: do not retry
	// it; the result returned alongside the error is valid.
	ErrPublish = errors.New("eventstore: publish after commit failed")
)

// VersionConflictError is returned when an append's [ExpectedVersion] does
// not match the stream. It matches [ErrWrongExpectedVersion] with errors.Is
// and reports true from Conflict, so packages that must not import eventstore
// can recognise it through interface{ Conflict() bool }.
type VersionConflictError struct {
	// Stream is the stream appended to.
	Stream string
	// Expected is what the appender asked for.
	Expected ExpectedVersion
	// Actual is the stream's version as the store found it (0 when the
	// stream has no events). After losing a race inside a caller's own
	// transaction (see [Store.AppendTx]), which PostgreSQL aborts so it
	// cannot be read again, it is the version found taken: the stream is at
	// least there.
	Actual int64

	// raced marks a conflict found by the (stream, version) constraint
	// rather than by the version check, so Actual is only a lower bound.
	raced bool
}

// Error describes the conflict.
func (e *VersionConflictError) Error() string {
	actual := "has no events"
	if e.Actual > 0 {
		actual = fmt.Sprintf("is at version %d", e.Actual)
	}
	return fmt.Sprintf("eventstore: stream %q: expected %s, but it %s", e.Stream, e.Expected, actual)
}

// Is reports whether target is [ErrWrongExpectedVersion].
func (e *VersionConflictError) Is(target error) bool { return target == ErrWrongExpectedVersion }

// Conflict reports true: the error is an optimistic-concurrency conflict,
// worth a reload and a new decision rather than a failure.
func (e *VersionConflictError) Conflict() bool { return true }

// PanicError is the error a panicking [TxHook] or [Publisher] becomes, so
// that it fails the append (or the publish) instead of crashing the caller.
// Find it with errors.As; it unwraps to the panic value when that is an
// error.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, captured where the panic
	// was recovered: it shows where the hook or publisher panicked.
	Stack []byte
}

func newPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// Error reports the panic value only; the stack is in Stack.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error (panic(err)), so that
// errors.Is finds it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
