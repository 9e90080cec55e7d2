package natsjs

import "errors"

// Errors a caller can match with errors.Is. Each returned error wraps one
// of them with what was being done and the values involved.
var (
	// ErrInvalidOption is returned for an option or argument that cannot
	// work: a nil clock, a negative duration, an empty durable name.
	ErrInvalidOption = errors.New("natsjs: invalid option")
	// ErrInvalidPrefix is returned for a subject prefix that is empty, has
	// an empty token ("time..x", ".time"), a wildcard (* or >) or white
	// space: a prefix must name subjects, not match them.
	ErrInvalidPrefix = errors.New("natsjs: invalid subject prefix")
	// ErrNoStream is returned when no JetStream stream stores the prefix's
	// subjects, or the one that does stores only some of them.
	ErrNoStream = errors.New("natsjs: no stream for the subjects")
	// ErrDuplicateWindow is returned by EnsureStream when the stream
	// exists with a duplicate window shorter than the one asked for: a
	// boundary re-published after it would be stored twice.
	ErrDuplicateWindow = errors.New("natsjs: duplicate window too short")
	// ErrUnsupportedEvent is returned by Publisher.Publish for a value that
	// is neither a tick.Event nor a tick.TicksSkipped.
	ErrUnsupportedEvent = errors.New("natsjs: unsupported event")
	// ErrUndecodable is what a Consumer reports for a message that is not
	// the event its subject names — poison: an unknown unit, a body that
	// is not the JSON a Publisher writes or lacks a field, an instant that
	// is no boundary, fields that disagree, a Nats-Msg-Id that is not the
	// event's. It terminates such a message (it would fail the same way at
	// every redelivery), counts it by reason and logs it once; the error
	// is a *PoisonError saying which.
	ErrUndecodable = errors.New("natsjs: undecodable message")
	// ErrNoMessageID is returned by a handler made with Once for an event
	// that came with no message id (not through a Consumer) and has no
	// ID method of its own to stand for one.
	ErrNoMessageID = errors.New("natsjs: no message id")
	// ErrAlreadyStarted is returned by Consumer.Start on a running consumer.
	ErrAlreadyStarted = errors.New("natsjs: consumer already started")
)
