package schedule

import (
	"fmt"
	"time"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

// maxCounted bounds how many missed slots a catch-up plan walks through;
// past it, the count of skipped slots is a lower bound.
const maxCounted = 1_000_000

// plan is what one firing does: fire one slot (or none), and report the
// slots before it (or all of them) skipped.
type plan struct {
	fire             time.Time
	skipFrom, skipTo time.Time
	skipped          int64
	// early is true when the first slot's time — the slot plus its jitter
	// — has not come by the deciding clock: the item was taken by a clock
	// ahead of this one, or this one stepped back since. Nothing fires,
	// nothing is skipped, and the slot must be kept (see notYet).
	early bool
}

// planFor applies the catch-up policy to the slots from first (the due
// item's) to now; live is how late a slot still counts as on time
// (WithLiveWindow).
func planFor(d Definition, first, now time.Time, live time.Duration) plan {
	var slots []time.Time // the latest ones, as many as the policy may fire
	keep := 1
	if a, ok := d.CatchUp.(tick.All); ok {
		keep = a.Max
	}
	var p plan
	if !first.IsZero() && (d.Until.IsZero() || !first.After(d.Until)) && d.due(first).After(now) {
		p.early = true
		return p
	}
	walked := 0
	// A slot has come when its due time — the slot plus its jitter — has:
	// a later slot whose jittered time is still ahead is not missed.
	for at := first; !at.IsZero() && !d.due(at).After(now) && walked < maxCounted; at = d.Spec.Next(at) {
		if !d.Until.IsZero() && at.After(d.Until) {
			break
		}
		walked++
		if len(slots) == keep {
			p.skip(slots[0])
			slots = slots[1:]
		}
		slots = append(slots, at)
	}
	if len(slots) == 0 {
		return p
	}
	switch c := d.CatchUp.(type) {
	case tick.All:
		for len(slots) > 0 && d.due(slots[0]).Before(now.Add(-c.Window)) {
			p.skip(slots[0])
			slots = slots[1:]
		}
	case tick.Skip:
		if now.Sub(d.due(slots[0])) > live {
			p.skip(slots[0])
			slots = nil
		}
	}
	if len(slots) > 0 {
		p.fire = slots[0]
	}
	return p
}

func (p *plan) skip(at time.Time) {
	if p.skipFrom.IsZero() {
		p.skipFrom = at
	}
	p.skipTo = at
	p.skipped++
}

// earlySlot is the outcome of an item taken before its slot's time had
// come by the scheduler's clock (plan.early). It is a conflict to the
// to-do list: the item is taken again at the next tick, its due time,
// attempts and schedule untouched, and the slot fires once its time has
// come. Moving the schedule on instead, as when every slot so far was
// skipped, would pass over the slot: neither fired nor counted skipped,
// the silent loss of issue 25 (a processor's clock 3 s ahead of the
// scheduler's lost 9 of 143 jittered slots a day). Nor is the item
// re-added at its due time: it would be due at once, and a full batch
// would take it again in the same tick, and again, while the clock
// stands.
type earlySlot struct {
	slot, due, now time.Time
}

func notYet(slot, due, now time.Time) error { return &earlySlot{slot: slot, due: due, now: now} }

func (e *earlySlot) Error() string {
	return fmt.Sprintf("slot %s is due at %s, not yet by the scheduler's clock (%s): kept for the next tick",
		timefmt.Format(e.slot), timefmt.Format(e.due), timefmt.Format(e.now))
}

// Conflict makes the to-do list take the item again at the next tick,
// without counting an attempt.
func (e *earlySlot) Conflict() bool { return true }
