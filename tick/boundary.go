package tick

import (
	"iter"
	"time"

	"github.com/passage-of-time/passage/internal/zone"
)

// Boundaries are computed by calendar arithmetic on the zone's offset
// segments (zone.Segment), never by stepping a clock: every answer is exact
// for any instant, across DST in both directions, offsets of 30 or 45
// minutes or of seconds (local mean time), dates whose midnight does not
// exist and dates a zone skipped entirely (Pacific/Apia, 2011-12-30). Every
// loop below moves forward (or backward) by at least one offset segment per
// turn, so each call ends after a few steps.

// Next returns the first boundary of u strictly after t, in loc (nil means
// UTC). It returns the zero time for a unit that is not one of Units().
//
// A boundary is, per unit:
//   - Minute: each instant where loc's wall clock shows HH:MM:00;
//   - Hour: each instant where it shows HH:00:00 — the repeated hour of a
//     fall-back passes twice, the skipped hour of a spring-forward never;
//   - Day: the first instant of each local date (01:00 where midnight is
//     skipped, as in America/Sao_Paulo on 2018-11-04);
//   - Week, Month, Quarter, Year: the first instant of the local ISO week
//     (Monday), month, quarter (January, April, July, October) or year.
func Next(u Unit, t time.Time, loc *time.Location) time.Time {
	loc = orUTC(loc)
	if d, ok := fixedUnits[u]; ok {
		return t.Truncate(d).Add(d).In(loc)
	}
	if p, ok := wallPeriod(u); ok {
		return nextWall(t, p, loc)
	}
	if !u.valid() {
		return time.Time{}
	}
	p := periodOf(u, t.In(loc)).next(u)
	for {
		if x := p.start(loc); x.After(t) {
			return x
		}
		p = p.next(u)
	}
}

// Previous returns the last boundary of u at or before t, in loc (nil means
// UTC): t itself when t is a boundary. It returns the zero time for a unit
// that is not one of Units(). See Next for what a boundary is.
func Previous(u Unit, t time.Time, loc *time.Location) time.Time {
	loc = orUTC(loc)
	if d, ok := fixedUnits[u]; ok {
		return t.Truncate(d).In(loc)
	}
	if p, ok := wallPeriod(u); ok {
		return prevWall(t, p, loc)
	}
	if !u.valid() {
		return time.Time{}
	}
	// Start one period ahead: after a fall-back across midnight the wall
	// clock can be back in yesterday although today has already begun.
	p := periodOf(u, t.In(loc)).next(u)
	for {
		if x := p.start(loc); !x.After(t) {
			return x
		}
		p = p.prev(u)
	}
}

// Boundaries yields the boundaries of u in (after, until], in order, in loc,
// computing each as it is consumed: a year of minutes costs no memory.
func Boundaries(u Unit, after, until time.Time, loc *time.Location) iter.Seq[time.Time] {
	return func(yield func(time.Time) bool) {
		if !u.valid() {
			return
		}
		for b := Next(u, after, loc); !b.After(until); b = Next(u, b, loc) {
			if !yield(b) {
				return
			}
		}
	}
}

func orUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// wallPeriod is the length in seconds of the wall-clock units, whose
// boundaries are the instants where local time is a multiple of it.
func wallPeriod(u Unit) (int64, bool) {
	switch u {
	case Minute:
		return 60, true
	case Hour:
		return 3600, true
	}
	return 0, false
}

// nextWall returns the first instant after t whose local time, in seconds,
// is a multiple of period. Within one offset segment those instants are
// evenly spaced; when the candidate falls past the segment's end the search
// continues in the next segment, from its first instant.
func nextWall(t time.Time, period int64, loc *time.Location) time.Time {
	a := t.Unix() + 1 // candidates are whole seconds; this is the first one after t
	for {
		off, end := zone.Segment(a, loc)
		c := ceilDiv(a+off, period)*period - off
		if end == zone.NoEnd || c < end {
			return time.Unix(c, 0).In(loc)
		}
		a = end
	}
}

// prevWall is nextWall's mirror: the last such instant at or before t.
func prevWall(t time.Time, period int64, loc *time.Location) time.Time {
	a := t.Unix()
	for {
		lt := time.Unix(a, 0).In(loc)
		_, off := lt.Zone()
		start, _ := lt.ZoneBounds()
		c := floorDiv(a+int64(off), period)*period - int64(off)
		if start.IsZero() || c >= start.Unix() {
			return time.Unix(c, 0).In(loc)
		}
		a = start.Unix() - 1
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// period is the local date a calendar period begins on, normalised by
// time.Date in UTC so that month and year overflow is plain arithmetic.
type period struct{ date time.Time }

func periodOf(u Unit, lt time.Time) period {
	y, m, d := lt.Date()
	switch u {
	case Week:
		d -= (int(lt.Weekday()) + 6) % 7 // back to Monday
	case Month:
		d = 1
	case Quarter:
		m, d = (m-1)/3*3+1, 1
	case Year:
		m, d = 1, 1
	}
	return period{time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

func (p period) next(u Unit) period { return p.step(u, 1) }
func (p period) prev(u Unit) period { return p.step(u, -1) }

func (p period) step(u Unit, n int) period {
	switch u {
	case Week:
		return period{p.date.AddDate(0, 0, 7*n)}
	case Month:
		return period{p.date.AddDate(0, n, 0)}
	case Quarter:
		return period{p.date.AddDate(0, 3*n, 0)}
	case Year:
		return period{p.date.AddDate(n, 0, 0)}
	}
	return period{p.date.AddDate(0, 0, n)}
}

// start returns the first instant whose local date is on or after the
// period's first date: local midnight when it exists, otherwise the first
// instant after the gap. Local time within one offset segment is instant +
// offset, so the answer is found segment by segment from an instant known
// to be earlier.
func (p period) start(loc *time.Location) time.Time {
	midnight := p.date.Unix() // local seconds of the date's 00:00
	a := midnight - zone.MaxOffset
	for {
		off, end := zone.Segment(a, loc)
		c := max(a, midnight-off)
		if end == zone.NoEnd || c < end {
			return time.Unix(c, 0).In(loc)
		}
		a = end
	}
}
