package bus

import (
	"errors"
	"fmt"
	"runtime/debug"
)

var (
	// ErrClosed is returned by Publish and Subscribe once Close has been
	// called.
	ErrClosed = errors.New("bus: closed")

	// ErrNilEvent is returned by Publish for a nil event: it has no type, so
	// no subscription could be chosen for it.
	ErrNilEvent = errors.New("bus: nil event")

	// ErrAbandoned is the error reported for each queued asynchronous event
	// that was never handled because Close's context ended before the queue
	// drained.
	ErrAbandoned = errors.New("bus: event abandoned at close")

	// ErrTimeout is wrapped by the error of a handler call that failed after
	// the Timeout middleware's deadline passed. The default Retry policy
	// retries it.
	ErrTimeout = errors.New("bus: handler timed out")
)

// HandlerError is how every handler failure reaches the caller: joined into
// Publish's error for synchronous subscriptions, and handed to the
// dead-letter callback, the observer, or the logger for asynchronous ones.
// It names the handler so that one failure among several can be told apart.
type HandlerError struct {
	// Handler is the subscription's name (see Name).
	Handler string
	// EventType is the published event's Go type, such as "order.Placed".
	EventType string
	// Event is the event the handler failed on.
	Event any
	// Err is what the handler (or its middleware) returned; a *PanicError
	// when it panicked.
	Err error
}

// Error names the handler and the event type before the handler's error.
func (e *HandlerError) Error() string {
	return fmt.Sprintf("bus: handler %q on %s: %v", e.Handler, e.EventType, e.Err)
}

// Unwrap returns the handler's own error, so errors.Is and errors.As see
// through the HandlerError.
func (e *HandlerError) Unwrap() error { return e.Err }

// PanicError is the error a handler's panic becomes. The publisher never
// crashes because of a handler.
type PanicError struct {
	// Value is what the handler passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, captured where the panic was
	// recovered.
	Stack []byte
}

func newPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// Error reports the panic value only; the stack is in Stack, and the bus's
// own logging records it.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v", e.Value)
}

// Unwrap returns the panic value when it is an error (panic(err)), so that
// errors.Is finds it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
