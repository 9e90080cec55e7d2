package orchestration

import (
	"encoding/json"
	"fmt"
	"time"
)

// Await waits for the signal named signal (Engine.Signal) for at most
// timeout: it returns the payload and true when a signal came (the oldest
// one not taken by an earlier Await), or the zero T and false when the
// time ran out. While it waits the instance sleeps; a signal wakes it.
func Await[T any](ctx Context, signal string, timeout time.Duration) (T, bool, error) {
	var zero T
	x := ctx.execution()
	raw, ok, err := x.await(signal, timeout)
	if err != nil || !ok {
		return zero, false, err
	}
	var v T
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return zero, false, fmt.Errorf("orchestration: signal %q: payload does not fit %T: %w", signal, zero, err)
		}
	}
	return v, true, nil
}

func (x *execution) await(signal string, timeout time.Duration) (json.RawMessage, bool, error) {
	if x.stopped() {
		return nil, false, ErrSuspended
	}
	if timeout < 0 {
		return nil, false, fmt.Errorf("%w: Await(%q, %v): negative timeout", ErrInvalidArgument, signal, timeout)
	}
	seq := x.seq
	x.seq++
	if x.cancelledHere() {
		return nil, false, x.cancelNow()
	}
	var until time.Time
	waited := false // the wait began in an earlier execution: its timeout is a wake-up
	switch e := x.peek().(type) {
	case awaitStarted:
		if e.Signal != signal || e.Seq != seq {
			x.mismatch(fmt.Sprintf("Await %q", signal))
			return nil, false, ErrSuspended
		}
		x.next++
		until, waited = e.Until, true
	case nil:
		if x.cancel {
			return nil, false, x.cancelNow()
		}
		until = x.now().Add(timeout)
		x.record(awaitStarted{Seq: seq, Signal: signal, Until: until})
	default:
		x.mismatch(fmt.Sprintf("Await %q", signal))
		return nil, false, ErrSuspended
	}
	switch e := x.peek().(type) {
	case signalConsumed:
		x.next++
		return x.payload(e.Version), true, nil
	case awaitTimedOut:
		x.next++
		return nil, false, nil
	case nil:
	default:
		if x.cancelledHere() {
			return nil, false, x.cancelNow()
		}
		x.mismatch(fmt.Sprintf("the end of Await %q", signal))
		return nil, false, ErrSuspended
	}
	if x.cancel {
		return nil, false, x.cancelNow()
	}
	for _, r := range x.history {
		if s, ok := r.Event.(signalReceived); ok && s.Name == signal && !x.consumed[r.Version] {
			x.consumed[r.Version] = true
			x.record(signalConsumed{Seq: seq, Version: r.Version})
			return s.Payload, true, nil
		}
	}
	if !x.now().Before(until) {
		x.record(awaitTimedOut{Seq: seq})
		if waited {
			x.resumed(until)
		}
		return nil, false, nil
	}
	x.suspend(until)
	return nil, false, ErrSuspended
}

func (x *execution) payload(version int64) json.RawMessage {
	for _, r := range x.history {
		if r.Version == version {
			if s, ok := r.Event.(signalReceived); ok {
				return s.Payload
			}
		}
	}
	return nil
}
