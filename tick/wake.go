package tick

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// wakeSchedule is the gocron.Cron behind the ticker's one job: it wakes the
// ticker at the nearest boundary of any of its units, computed by the same
// calendar arithmetic that decides what to emit.
type wakeSchedule struct{ t *Ticker }

func (wakeSchedule) IsValid(string, *time.Location, time.Time) error { return nil }

func (w wakeSchedule) Next(last time.Time) time.Time {
	var next time.Time
	for _, u := range w.t.cfg.units {
		if n := Next(u, last, w.t.cfg.loc); next.IsZero() || n.Before(next) {
			next = n
		}
	}
	return distinctWall(last, next)
}

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
