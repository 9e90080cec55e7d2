package tick

import (
	"fmt"
	"time"
)

// CatchUp decides what happens to boundaries that passed while the ticker
// was not emitting (down, asleep, stalled, or not the leader). The boundary
// that has just passed at a live wake-up is always emitted; a policy only
// chooses among the missed ones. Whatever it does not emit is published as a
// TicksSkipped and counted. The implementations are All, LatestOnly and Skip.
type CatchUp interface {
	name() string
	validate() error
}

// All emits every missed boundary in order, each marked CatchUp, within
// bounds: only boundaries at most Window before now, and of those only the
// latest Max. Older ones are reported skipped. Both bounds must be
// positive, and Window at most MaxDuration.
type All struct {
	Window time.Duration
	Max    int
}

// LatestOnly emits only the most recent boundary (marked CatchUp when it was
// missed) and reports the rest skipped; the event's Previous is the cursor's
// boundary, before the skipped ones.
type LatestOnly struct{}

// Skip emits none of the missed boundaries and reports them all skipped.
type Skip struct{}

// DefaultCatchUp is the policy of units without WithCatchUp: a week of
// missed boundaries, at most 10,080 (a week of minutes).
var DefaultCatchUp CatchUp = All{Window: 7 * 24 * time.Hour, Max: 7 * 24 * 60}

func (All) name() string        { return "all" }
func (LatestOnly) name() string { return "latest-only" }
func (Skip) name() string       { return "skip" }

func (a All) validate() error {
	if a.Window <= 0 {
		return fmt.Errorf("%w: All.Window %v must be positive", ErrInvalidOption, a.Window)
	}
	if a.Window > MaxDuration {
		return fmt.Errorf("%w: All.Window %v is too long: at most %v (100 years)", ErrInvalidOption, a.Window, MaxDuration)
	}
	if a.Max <= 0 {
		return fmt.Errorf("%w: All.Max must be positive, got %d", ErrInvalidOption, a.Max)
	}
	return nil
}

func (LatestOnly) validate() error { return nil }
func (Skip) validate() error       { return nil }

// plan is what one pass does for one unit: boundaries in (cursor, skipTo]
// are reported skipped, those in (skipTo, latest] are emitted.
type plan struct {
	first  time.Time // first boundary after the cursor
	latest time.Time // last boundary at or before now
	// keepFrom is the first boundary emitted; boundaries in [first,
	// keepFrom) are skipped. After latest when nothing is emitted.
	keepFrom time.Time
}

// planFor applies policy to the boundaries of u in (cursor, now]. live
// reports whether latest is a live boundary (passed while the ticker was
// running and is the most recent), which every policy emits.
func planFor(policy CatchUp, u Unit, loc *time.Location, first, latest, now time.Time, live bool) plan {
	p := plan{first: first, latest: latest}
	lastMissed := latest
	if live {
		lastMissed = Previous(u, latest.Add(-time.Nanosecond), loc)
	}
	none := latest // emit only latest when live, nothing otherwise
	if !live {
		none = Next(u, latest, loc)
	}
	switch pol := policy.(type) {
	case LatestOnly:
		p.keepFrom = latest
	case All:
		lo := first
		if w := Next(u, now.Add(-pol.Window).Add(-time.Nanosecond), loc); w.After(lo) {
			lo = w
		}
		if lastMissed.Before(lo) {
			p.keepFrom = none
			break
		}
		// Walk back from the last missed boundary: the latest Max are kept.
		b := lastMissed
		for i := 1; i < pol.Max; i++ {
			prev := Previous(u, b.Add(-time.Nanosecond), loc)
			if prev.Before(lo) {
				break
			}
			b = prev
		}
		p.keepFrom = b
	default: // Skip
		p.keepFrom = none
	}
	return p
}
