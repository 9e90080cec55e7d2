package orchestration

import (
	"fmt"
	"math/rand/v2"
	"time"
)

func (x *execution) now() time.Time { return x.engine.clock.Now() }

func (x *execution) Now() time.Time {
	if x.stopped() {
		return time.Time{} // unwinding: nothing more is recorded
	}
	if e, ok := x.peek().(nowRecorded); ok {
		x.next++
		return e.At
	}
	if !x.live() {
		x.mismatch("Now")
		return time.Time{}
	}
	at := x.now()
	x.record(nowRecorded{At: at})
	return at
}

func (x *execution) NewID() string {
	if x.stopped() {
		return ""
	}
	if e, ok := x.peek().(idRecorded); ok {
		x.next++
		return e.ID
	}
	if !x.live() {
		x.mismatch("NewID")
		return ""
	}
	id := newID()
	x.record(idRecorded{ID: id})
	return id
}

// newID returns a random 128-bit id in hex.
func newID() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}
