package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Spec is a recurrence: the instants ("slots") at which a schedule fires.
// Implementations are immutable and safe for concurrent use.
type Spec interface {
	// Next returns the first slot strictly after t, or the zero time when
	// the spec has none left.
	Next(t time.Time) time.Time
	// String describes the spec; equal specs print alike, so it serves as
	// the spec's identity when a schedule is synchronised. Parse reads back
	// the String of an interval, a cron expression and a recurrence rule.
	String() string
}

// Interval bounds: a slot is a whole second, and a slot must stay
// representable after a few thousand intervals.
const (
	MinInterval = time.Second
	MaxInterval = 100 * 365 * 24 * time.Hour
)

// Every returns the slots anchor + k·d for k = 0, 1, 2, …: absolute
// durations, indifferent to DST and time zones (every 8 hours is 8 hours
// even across a clock change). The anchor's sub-second part is dropped. d
// must be a whole number of seconds between MinInterval and MaxInterval.
func Every(d time.Duration, anchor time.Time) (Spec, error) {
	switch {
	case d < MinInterval || d > MaxInterval:
		return nil, fmt.Errorf("%w: every %s: the interval must be between %s and %s", ErrInvalidSpec, d, MinInterval, MaxInterval)
	case d%time.Second != 0:
		return nil, fmt.Errorf("%w: every %s: the interval must be a whole number of seconds", ErrInvalidSpec, d)
	case anchor.IsZero():
		return nil, fmt.Errorf("%w: every %s: the anchor (the first slot) is the zero time", ErrInvalidSpec, d)
	}
	return every{d: d, anchor: anchor.Truncate(time.Second)}, nil
}

type every struct {
	d      time.Duration
	anchor time.Time
}

func (e every) Next(t time.Time) time.Time {
	if t.Before(e.anchor) {
		return e.anchor
	}
	// Whole seconds: k·d stays exact where nanoseconds since the anchor
	// would overflow (292 years).
	since := t.Unix() - e.anchor.Unix()
	step := int64(e.d / time.Second)
	k := since/step + 1
	return time.Unix(e.anchor.Unix()+k*step, 0).In(e.anchor.Location())
}

func (e every) String() string {
	return fmt.Sprintf("@every %s from %s", e.d, e.anchor.UTC().Format(time.RFC3339))
}

// Union returns the slots of every spec, each instant once.
func Union(specs ...Spec) Spec {
	return union(slices.Clone(specs))
}

type union []Spec

func (u union) Next(t time.Time) time.Time {
	var best time.Time
	for _, s := range u {
		if n := s.Next(t); !n.IsZero() && (best.IsZero() || n.Before(best)) {
			best = n
		}
	}
	return best
}

func (u union) String() string { return "union(" + join(u) + ")" }

func join(specs []Spec) string {
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = s.String()
	}
	return strings.Join(parts, "; ")
}

// maxExcepted bounds how many slots in a row Except skips before it
// takes a spec as ended: a spec whose every slot is excepted has none.
const maxExcepted = 100_000

// Except returns the slots of s except those on a local date (in loc) on
// which any of the exceptions has a slot: a holiday list (Dates) or a
// holiday rule (Easter, a recurrence rule) removes a day's slots, whatever
// their time of day. A spec whose next 100,000 slots are all excepted is
// taken as ended.
func Except(s Spec, loc *time.Location, exceptions ...Spec) Spec {
	if loc == nil {
		loc = time.UTC
	}
	return except{s, loc, slices.Clone(exceptions)}
}

type except struct {
	s          Spec
	loc        *time.Location
	exceptions []Spec
}

func (e except) Next(t time.Time) time.Time {
	for range maxExcepted {
		n := e.s.Next(t)
		if n.IsZero() || !e.excepted(n) {
			return n
		}
		t = n
	}
	return time.Time{}
}

func (e except) excepted(slot time.Time) bool {
	y, m, d := slot.In(e.loc).Date()
	// The local date's first instant and the next date's, by the wall
	// clock: an exception slot at any time of the date counts.
	from := dateStart(y, m, d, e.loc)
	to := dateStart(y, m, d+1, e.loc)
	for _, x := range e.exceptions {
		if n := x.Next(from.Add(-time.Nanosecond)); !n.IsZero() && n.Before(to) {
			return true
		}
	}
	return false
}

func (e except) String() string {
	return fmt.Sprintf("except(%s; in %s: %s)", e.s, e.loc, join(e.exceptions))
}

// Date is a calendar date, without a time or a zone.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// ParseDate reads a date written YYYY-MM-DD.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}, fmt.Errorf("%w: date %q: want YYYY-MM-DD", ErrInvalidSpec, s)
	}
	return Date{t.Year(), t.Month(), t.Day()}, nil
}

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// Dates returns one slot on each of the dates, at its first instant in loc
// (midnight, or the first instant after a gap that swallows it): a finite
// list, most useful as an exception (holidays). A date the zone skipped
// entirely (Pacific/Apia, 2011-12-30) has no slot.
func Dates(loc *time.Location, dates ...Date) (Spec, error) {
	if loc == nil {
		loc = time.UTC
	}
	var slots []time.Time
	for _, d := range dates {
		if n := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC); n.Year() != d.Year || n.Month() != d.Month || n.Day() != d.Day {
			return nil, fmt.Errorf("%w: date %s does not exist", ErrInvalidSpec, d)
		}
		start := dateStart(d.Year, d.Month, d.Day, loc)
		if y, m, dd := start.Date(); y == d.Year && m == d.Month && dd == d.Day {
			slots = append(slots, start)
		}
	}
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	slots = slices.CompactFunc(slots, time.Time.Equal)
	names := make([]string, len(dates))
	for i, d := range dates {
		names[i] = d.String()
	}
	slices.Sort(names)
	return dateList{slots, fmt.Sprintf("dates(%s: %s)", loc, strings.Join(slices.Compact(names), ","))}, nil
}

type dateList struct {
	slots []time.Time
	text  string
}

func (l dateList) Next(t time.Time) time.Time {
	i, _ := slices.BinarySearchFunc(l.slots, t, func(s, t time.Time) int {
		if s.After(t) {
			return 1
		}
		return -1
	})
	if i == len(l.slots) {
		return time.Time{}
	}
	return l.slots[i]
}

func (l dateList) String() string { return l.text }
