package natsjs

import (
	"errors"
	"fmt"
	"strings"
)

// Errors a caller can match with errors.Is. Each returned error wraps one
// of them with what was being done and the values involved.
var (
	// ErrInvalidOption is returned for an option or argument that cannot
	// work: a nil clock, a negative duration, an empty durable name.
	ErrInvalidOption = errors.New("natsjs: invalid option")
	// ErrInvalidPrefix is returned for a subject prefix that is empty, has
	// an empty token ("time..x", ".time"), a wildcard (* or >), white
	// space or a control character, or starts with '$' (the server's
	// subjects): a prefix must name subjects, not match them. The error
	// is a *PrefixError (see CheckPrefix).
	ErrInvalidPrefix = errors.New("natsjs: invalid subject prefix")
	// ErrNoStream is returned when no JetStream stream stores the prefix's
	// subjects, or the one that does stores only some of them.
	ErrNoStream = errors.New("natsjs: no stream for the subjects")
	// ErrDuplicateWindow is returned by EnsureStream when the stream
	// exists with a duplicate window shorter than the one asked for: a
	// boundary re-published after it would be stored twice.
	ErrDuplicateWindow = errors.New("natsjs: duplicate window too short")
	// ErrUnsupportedEvent is returned by Publisher.Publish and Encode for
	// a value that is neither a tick.Event nor a tick.TicksSkipped, and
	// by EncodeRecord for a record of a type the layout gives no subject,
	// or a record of time that is not what Encode makes of its event.
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
	// ErrJetStreamNotEnabled is returned by EnsureStream, NewPublisher,
	// NewEventSink and Consumer.Start when the server answers but runs
	// without JetStream (nats-server without -js, or an account without
	// it): no stream can be made or read there. The error names the
	// server's URL. It comes at once: such a server answers JetStream's
	// requests with "no responders", which nats.go passes on as it is.
	ErrJetStreamNotEnabled = errors.New("natsjs: JetStream is not enabled on the server")
	// ErrSubjectsOverlap is returned by EnsureStream when the stream it
	// would create stores subjects another stream stores already (the
	// server refuses two streams for one subject). The error is an
	// *OverlapError naming that stream and its subjects.
	ErrSubjectsOverlap = errors.New("natsjs: subjects overlap an existing stream")
	// ErrAlreadyStarted is returned by Consumer.Start on a running consumer.
	ErrAlreadyStarted = errors.New("natsjs: consumer already started")
)

// PrefixError is why a subject prefix cannot serve (CheckPrefix). It
// wraps ErrInvalidPrefix.
type PrefixError struct {
	// Prefix is the prefix refused.
	Prefix string
	// Reason says what is wrong with it: `token "*" holds the wildcard
	// '*': …`, `token 2 is empty (…)`.
	Reason string
}

// Error names the prefix and the reason.
func (e *PrefixError) Error() string {
	return fmt.Sprintf("%v: %q: %s", ErrInvalidPrefix, e.Prefix, e.Reason)
}

// Unwrap returns ErrInvalidPrefix.
func (e *PrefixError) Unwrap() error { return ErrInvalidPrefix }

// OverlapError is EnsureStream's error when the stream it would create,
// storing Prefix.>, overlaps the subjects of a stream that exists: it
// names that stream and its subjects, and the way out, another prefix.
// It wraps ErrSubjectsOverlap.
type OverlapError struct {
	// Stream is the stream EnsureStream was to create, Prefix its prefix.
	Stream, Prefix string
	// Existing is the stream whose subjects overlap, and Subjects all of
	// its subjects; Existing is empty when the server would not say
	// which (Err says why).
	Existing string
	Subjects []string
	// Covers is true when Existing stores every subject under Prefix: it
	// could be used as it is, under its name.
	Covers bool
	// Server is the URL of the server.
	Server string
	// Err is the server's refusal, or the failed lookup of the stream.
	Err error
}

// Error names the streams and what to change: the prefix, which the
// program that called EnsureStream takes as an option or flag.
func (e *OverlapError) Error() string {
	if e.Existing == "" {
		return fmt.Sprintf("natsjs: cannot create stream %s for %s.> on %s: its subjects overlap an existing stream's (which one the server would not say: %v); choose another prefix (the prefix option or flag) that no stream's subjects cover",
			e.Stream, e.Prefix, e.Server, e.Err)
	}
	msg := fmt.Sprintf("natsjs: cannot create stream %s for %s.> on %s: its subjects overlap stream %s's %s; choose another prefix (the prefix option or flag) that none of %s's subjects cover",
		e.Stream, e.Prefix, e.Server, e.Existing, strings.Join(e.Subjects, ", "), e.Existing)
	if e.Covers {
		msg += fmt.Sprintf(", or name stream %s (the stream option or flag), which stores every subject under %s", e.Existing, e.Prefix)
	}
	return msg
}

// Unwrap returns ErrSubjectsOverlap and the server's error.
func (e *OverlapError) Unwrap() []error { return []error{ErrSubjectsOverlap, e.Err} }
