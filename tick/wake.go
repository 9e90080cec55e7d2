package tick

import (
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// wakeSchedule is the gocron.Cron behind the ticker's one job. gocron asks
// it for the next wake-up once a pass is over (WithIntervalFromCompletion),
// and it answers with the earliest of: the nearest boundary after the
// instant the last pass covered, computed by the same calendar arithmetic
// that decides what to emit; the retry of a failed pass; and, with
// WithLease, the lease's renewal (holder) or expiry (standby). A standby
// wakes only for the lease: it could not emit at a boundary anyway.
type wakeSchedule struct{ t *Ticker }

func (wakeSchedule) IsValid(string, *time.Location, time.Time) error { return nil }

// wakeState is what the last wake-up's pass left for the schedule, guarded
// by Ticker.mu.
type wakeState struct {
	passAt   time.Time  // the instant the last pass covered
	retryAt  time.Time  // when to retry a failed pass; zero after a good one
	failures int        // failed passes in a row
	leaseAt  time.Time  // when to renew the lease (holder) or try to take it (standby)
	standby  bool       // another replica held the lease at the last pass
	held     *leaseHold // the lease held after the last pass, released by Stop
	watching Lease      // the other replica's lease last logged
}

// schedule records the outcome of a wake-up's pass, which covered now and
// ended at end, for the next Next, and returns when a failed pass is
// retried: a backoff after the end, so that a pass that failed after
// running longer than its backoff is not retried at once (nor logged with
// a retry time already past).
func (t *Ticker) schedule(now, end time.Time, out outcome, err error) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := &t.wakeState
	w.passAt = now
	if err != nil && !errors.Is(err, ErrNotLeader) {
		w.failures++
		from := now
		if end.After(from) {
			from = end
		}
		w.retryAt = from.Add(t.cfg.backoff(w.failures))
	} else {
		w.failures, w.retryAt = 0, time.Time{}
	}
	if t.cfg.holder == "" {
		return w.retryAt
	}
	w.held, w.standby, w.leaseAt = out.lease, false, time.Time{}
	switch {
	case out.lease != nil:
		w.leaseAt = out.lease.taken.Add(t.cfg.ttl / 3)
	case errors.Is(err, ErrNotLeader):
		w.standby, w.leaseAt = true, out.seen.Expires
		if out.seen.Holder != w.watching.Holder || out.seen.Term != w.watching.Term {
			w.watching = out.seen
			t.cfg.logger.Info(fmt.Sprintf("tick: standby: lease held by %s until %s", out.seen.Holder, timefmt.Format(out.seen.Expires)),
				"holder", out.seen.Holder, "term", out.seen.Term)
		}
	}
	return w.retryAt
}

func (w wakeSchedule) Next(last time.Time) time.Time {
	t := w.t
	t.mu.Lock()
	s := t.wakeState
	t.mu.Unlock()
	from := s.passAt
	if from.IsZero() || from.After(last) {
		from = last
	}
	var next time.Time
	earliest := func(at time.Time) {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if !s.standby {
		for _, u := range t.cfg.units {
			earliest(Next(u, from, t.cfg.loc))
		}
	}
	earliest(s.retryAt)
	earliest(s.leaseAt)
	if next.After(last) {
		return distinctWall(last, next)
	}
	// Already due: boundaries passed during a long pass, or a retry or
	// lease instant did. On a clock that stands still (a fake clock) that
	// is last itself, which gocron fires at once. On a moving clock gocron
	// asks again for anything before its own now, so answer a little after
	// now rather than chase the clock.
	if now := t.cfg.clock.Now(); last.Before(now) {
		return now.Add(dueSlack)
	}
	return last
}

// dueSlack is how far ahead of a moving clock an overdue wake-up is put.
const dueSlack = time.Millisecond

// distinctWall returns next in a location where its wall clock differs from
// last's. gocron drops a wake-up whose wall time equals the previous one's,
// to avoid running a cron job twice in a fall-back hour; the repeated hour
// is a boundary of its own here, so the instant is expressed in UTC (or,
// when UTC happens to read the same, one hour east of it) to keep it.
func distinctWall(last, next time.Time) time.Time {
	for _, loc := range []*time.Location{time.UTC, oneHourEast} {
		n := next.In(loc)
		if !sameWall(last, n) {
			return n
		}
	}
	return next
}

var oneHourEast = time.FixedZone("UTC+1", 3600)

func sameWall(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd &&
		a.Hour() == b.Hour() && a.Minute() == b.Minute() && a.Second() == b.Second()
}

// wakeClock is the clock handed to gocron. It is the ticker's clock, but
// it tells the ticker when gocron arms and fires its wake-up timer, which
// is how AdvanceAndWait knows, without sleeping, that a fake clock may be
// advanced and when the pass it caused is over.
type wakeClock struct {
	clockwork.Clock
	t *Ticker
}

func (c wakeClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	w := &wakeTimer{t: c.t}
	at := c.Now().Add(d)
	w.Timer = c.Clock.AfterFunc(d, func() {
		c.t.fire(w)
		f()
	})
	// Armed only once the clock holds the timer: a fake clock advanced
	// before that would not fire it.
	c.t.arm(w, at)
	return w
}

type wakeTimer struct {
	clockwork.Timer
	t     *Ticker
	fired bool // guarded by Ticker.mu
}

func (w *wakeTimer) Stop() bool {
	stopped := w.Timer.Stop()
	if stopped {
		w.t.disarm(w)
	}
	return stopped
}

// progress is what the ticker tells AdvanceAndWait, guarded by Ticker.mu.
type progress struct {
	armed    *wakeTimer // gocron's pending wake-up timer, if any
	armedFor time.Time  // when it fires
	owed     time.Time  // a pass at or after this instant was triggered
	done     time.Time  // the latest instant a completed pass ran at
	changed  chan struct{}
}

func newProgress() progress { return progress{changed: make(chan struct{})} }

// notify wakes everyone waiting on a change; the caller holds mu.
func (p *progress) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (t *Ticker) arm(w *wakeTimer, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.fired { // a timer due at once may fire before AfterFunc returns
		return
	}
	t.armed, t.armedFor = w, at
	t.notify()
}

func (t *Ticker) disarm(w *wakeTimer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.armed == w {
		t.armed = nil
		t.notify()
	}
}

func (t *Ticker) fire(w *wakeTimer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w.fired = true
	if t.armed == w {
		t.armed = nil
	}
	t.owe(t.cfg.clock.Now())
	t.notify()
}

// owe records that a pass at or after at was triggered; the caller holds mu.
func (t *Ticker) owe(at time.Time) {
	if at.After(t.owed) {
		t.owed = at
	}
}

func (t *Ticker) passed(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if at.After(t.done) {
		t.done = at
	}
	t.notify()
}
