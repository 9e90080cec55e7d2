package orchestration

import (
	"errors"
)

var (
	// ErrSuspended is returned by Sleep, SleepUntil and Await when the
	// instance must wait: the workflow function returns it as it is, and
	// the instance sleeps until its wake-up falls due. It is preallocated:
	// suspending costs no allocation.
	ErrSuspended = errors.New("orchestration: suspended until a wake-up")
	// ErrNondeterministic is recorded when a replay asks for something else
	// than the history holds at that point (code changed under a running
	// instance); the instance is stuck, the error names both.
	ErrNondeterministic = errors.New("orchestration: the history does not match the function")
	// ErrCancelled is returned by the Context's calls once Cancel was
	// requested: the function unwinds, its compensations run.
	ErrCancelled = errors.New("orchestration: instance cancelled")
	// ErrUnknownWorkflow is returned for a workflow name not registered.
	ErrUnknownWorkflow = errors.New("orchestration: unknown workflow")
	// ErrUnknownInstance is returned for an instance id that was never started.
	ErrUnknownInstance = errors.New("orchestration: unknown instance")
	// ErrFinished is returned by Signal and Cancel for an instance that
	// has ended (completed, failed, cancelled or stuck): nothing would
	// read what they appended.
	ErrFinished = errors.New("orchestration: instance finished")
	// ErrNotFinished is returned by Result for an instance still running.
	ErrNotFinished = errors.New("orchestration: instance not finished")
	// ErrInvalidArgument is returned for bad input (an empty id, a nil
	// function, a negative duration), naming it.
	ErrInvalidArgument = errors.New("orchestration: invalid argument")
)

// nonRetryable marks a step error that must not be retried.
type nonRetryable struct{ err error }

func (n nonRetryable) Error() string { return n.err.Error() }
func (n nonRetryable) Unwrap() error { return n.err }

// NonRetryable marks err so that a Step fails at once instead of being
// retried (a declined card, a validation error).
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return nonRetryable{err}
}

// IsNonRetryable reports whether err was marked with NonRetryable.
func IsNonRetryable(err error) bool {
	var n nonRetryable
	return errors.As(err, &n)
}
