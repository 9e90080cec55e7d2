package orchestration

import (
	"fmt"
	"time"
)

func (x *execution) Sleep(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: Sleep(%v): negative duration", ErrInvalidArgument, d)
	}
	return x.sleep(func() time.Time { return x.now().Add(d) })
}

func (x *execution) SleepUntil(t time.Time) error {
	return x.sleep(func() time.Time { return t })
}

// sleep is a durable delay: TimerScheduled records when it ends, and
// TimerFired that replay found it over, so later replays go on at once
// without asking the clock.
func (x *execution) sleep(until func() time.Time) error {
	if x.stopped() {
		return ErrSuspended
	}
	seq := x.seq
	x.seq++
	if x.cancelledHere() {
		return x.cancelNow()
	}
	var end time.Time
	slept := false // the delay began in an earlier execution: ending it is a wake-up
	switch e := x.peek().(type) {
	case timerScheduled:
		x.next++
		end, slept = e.Until, true
	case nil:
		if x.cancel {
			return x.cancelNow()
		}
		end = until()
		x.record(timerScheduled{Seq: seq, Until: end})
	default:
		x.mismatch("Sleep")
		return ErrSuspended
	}
	switch e := x.peek().(type) {
	case timerFired:
		if e.Seq != seq {
			x.mismatch("Sleep")
			return ErrSuspended
		}
		x.next++
		return nil
	case nil:
	default:
		if x.cancelledHere() {
			return x.cancelNow()
		}
		x.mismatch("the end of Sleep")
		return ErrSuspended
	}
	if x.cancel {
		return x.cancelNow()
	}
	if !x.now().Before(end) {
		// Already over (a replay catching up): go on now, no round trip.
		x.record(timerFired{Seq: seq})
		if slept {
			x.resumed(end)
		}
		return nil
	}
	x.suspend(end)
	return ErrSuspended
}

func (x *execution) suspend(until time.Time) {
	x.suspended = true
	x.wakeAt = until
}
