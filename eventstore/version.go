package eventstore

import (
	"fmt"
	"math"
)

// ExpectedVersion is the condition an append puts on the stream's current
// version, with the semantics of EventStoreDB, Eventuous and Emmett.
//
// Versions count events: the first event of a stream has version 1, and a
// stream's version is the version of its last event, 0 when it has none. So
// [NoStream] and Exact(0) are the same condition.
type ExpectedVersion int64

const (
	// Any appends whatever the stream's version; no concurrency check.
	Any ExpectedVersion = -1
	// NoStream appends only if the stream has no events yet.
	NoStream ExpectedVersion = 0
	// StreamExists appends only if the stream has at least one event.
	StreamExists ExpectedVersion = -2

	// invalid is what Exact makes of a negative version, so the mistake is
	// reported by Append instead of silently meaning Any or StreamExists.
	invalid ExpectedVersion = math.MinInt64
)

// Exact appends only if the stream's version is v, i.e. its last event has
// version v (0: the stream has no events, like [NoStream]). A negative v is
// rejected by Append with [ErrInvalidArgument].
func Exact(v int64) ExpectedVersion {
	if v < 0 {
		return invalid
	}
	return ExpectedVersion(v)
}

// String names the condition: "any", "no stream", "stream exists" or
// "version N".
func (e ExpectedVersion) String() string {
	switch {
	case e == Any:
		return "any"
	case e == NoStream:
		return "no stream"
	case e == StreamExists:
		return "stream exists"
	case e > 0:
		return fmt.Sprintf("version %d", int64(e))
	default:
		return fmt.Sprintf("invalid expected version %d", int64(e))
	}
}

func (e ExpectedVersion) valid() bool {
	return e >= 0 || e == Any || e == StreamExists
}

// allows reports whether a stream currently at version actual satisfies e.
func (e ExpectedVersion) allows(actual int64) bool {
	switch e {
	case Any:
		return true
	case StreamExists:
		return actual > 0
	default:
		return int64(e) == actual
	}
}

// holdsAfterRace reports whether e still holds for a stream whose next
// version another appender just took: it is Any or StreamExists, so the
// append can simply go after it.
func (e ExpectedVersion) holdsAfterRace() bool {
	return e == Any || e == StreamExists
}
