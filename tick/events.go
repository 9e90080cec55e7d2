package tick

import (
	"fmt"
	"time"
)

// Event is what every passage-of-time event implements, so one handler can
// take them all (bus.Subscribe[tick.Event]). (Unit, Boundary) is the event's
// identity: the same boundary emitted twice is the same event.
type Event interface {
	// Unit is the calendar unit whose boundary passed.
	Unit() Unit
	// Boundary is the instant that passed, in the ticker's location.
	Boundary() time.Time
	// Previous is the boundary the unit's cursor stood on before this
	// event (see Passage.Since).
	Previous() time.Time
	// ID is the event's identity, "unit/boundary in RFC 3339 UTC", stable
	// across processes and restarts; use it to deduplicate.
	ID() string
}

// Passage is the content every passage-of-time event carries.
type Passage struct {
	// At is the boundary instant that passed.
	At time.Time
	// Since is the boundary the unit's cursor stood on before this event:
	// the previous event's boundary, or the starting point a ticker records
	// without emitting it the first time it runs (the most recent boundary
	// then). It is Next's predecessor of At unless a catch-up policy left
	// boundaries out (LatestOnly, a bounded All): those lie between Since
	// and At and were reported in a TicksSkipped just before this event.
	// The cursor moves past them as soon as they are reported, so that they
	// are reported once: should this event's publish fail, its retry has
	// the last skipped boundary as Since.
	// It is zero only for events built without a ticker.
	Since time.Time
	// EmittedAt is when the ticker actually published the event, by its clock.
	EmittedAt time.Time
	// CatchUp is true when the boundary was emitted late, after the ticker
	// was down or asleep, rather than at its own wake-up: the boundary passed
	// before the ticker started, or a later boundary of the same unit had
	// passed too by the time it was emitted.
	CatchUp bool
}

// Boundary returns the instant that passed.
func (p Passage) Boundary() time.Time { return p.At }

// Previous returns Since: the boundary the cursor stood on before At.
func (p Passage) Previous() time.Time { return p.Since }

// id prints the boundary in UTC, whose offset has no seconds to lose, so
// that the same instant has the same ID whatever the location.
func id(u Unit, at time.Time) string {
	return fmt.Sprintf("%s/%s", u, at.UTC().Format(time.RFC3339Nano))
}

// MinuteHasPassed is published at every wall-clock minute.
type MinuteHasPassed struct{ Passage }

// HourHasPassed is published whenever the local wall clock shows HH:00.
type HourHasPassed struct{ Passage }

// DayHasPassed is published at the first instant of each local date.
type DayHasPassed struct{ Passage }

// WeekHasPassed is published at the first instant of each ISO week (Monday).
type WeekHasPassed struct{ Passage }

// MonthHasPassed is published at the first instant of each month.
type MonthHasPassed struct{ Passage }

// QuarterHasPassed is published at the first instant of each quarter.
type QuarterHasPassed struct{ Passage }

// YearHasPassed is published at the first instant of each year.
type YearHasPassed struct{ Passage }

// Unit returns Minute.
func (MinuteHasPassed) Unit() Unit { return Minute }

// Unit returns Hour.
func (HourHasPassed) Unit() Unit { return Hour }

// Unit returns Day.
func (DayHasPassed) Unit() Unit { return Day }

// Unit returns Week.
func (WeekHasPassed) Unit() Unit { return Week }

// Unit returns Month.
func (MonthHasPassed) Unit() Unit { return Month }

// Unit returns Quarter.
func (QuarterHasPassed) Unit() Unit { return Quarter }

// Unit returns Year.
func (YearHasPassed) Unit() Unit { return Year }

// ID returns "minute/<boundary>".
func (e MinuteHasPassed) ID() string { return id(Minute, e.At) }

// ID returns "hour/<boundary>".
func (e HourHasPassed) ID() string { return id(Hour, e.At) }

// ID returns "day/<boundary>".
func (e DayHasPassed) ID() string { return id(Day, e.At) }

// ID returns "week/<boundary>".
func (e WeekHasPassed) ID() string { return id(Week, e.At) }

// ID returns "month/<boundary>".
func (e MonthHasPassed) ID() string { return id(Month, e.At) }

// ID returns "quarter/<boundary>".
func (e QuarterHasPassed) ID() string { return id(Quarter, e.At) }

// ID returns "year/<boundary>".
func (e YearHasPassed) ID() string { return id(Year, e.At) }

// NewEvent builds the concrete event type of unit u (MinuteHasPassed for
// Minute, and so on) carrying p.
func NewEvent(u Unit, p Passage) (Event, error) {
	switch u {
	case Minute:
		return MinuteHasPassed{p}, nil
	case Hour:
		return HourHasPassed{p}, nil
	case Day:
		return DayHasPassed{p}, nil
	case Week:
		return WeekHasPassed{p}, nil
	case Month:
		return MonthHasPassed{p}, nil
	case Quarter:
		return QuarterHasPassed{p}, nil
	case Year:
		return YearHasPassed{p}, nil
	}
	if _, ok := fixedUnits[u]; ok {
		return fixedHasPassed{p, u}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownUnit, string(u))
}

// PassageOf returns the Passage e carries: what an encoder of the events
// writes besides the unit (the emission and the catch-up flag, which the
// Event interface does not give). ok is false for an Event of a type not
// built by this package.
func PassageOf(e Event) (p Passage, ok bool) {
	switch e := e.(type) {
	case MinuteHasPassed:
		return e.Passage, true
	case HourHasPassed:
		return e.Passage, true
	case DayHasPassed:
		return e.Passage, true
	case WeekHasPassed:
		return e.Passage, true
	case MonthHasPassed:
		return e.Passage, true
	case QuarterHasPassed:
		return e.Passage, true
	case YearHasPassed:
		return e.Passage, true
	case fixedHasPassed:
		return e.Passage, true
	}
	return Passage{}, false
}

// fixedHasPassed is the event of the unexported sub-minute test units.
type fixedHasPassed struct {
	Passage
	unit Unit
}

func (e fixedHasPassed) Unit() Unit { return e.unit }
func (e fixedHasPassed) ID() string { return id(e.unit, e.At) }

// TicksSkipped reports boundaries a catch-up policy chose not to emit, so
// that nothing is dropped silently. It is not an Event: a handler of every
// tick.Event does not receive it as one more boundary.
type TicksSkipped struct {
	// Unit is the unit whose boundaries were skipped.
	Unit Unit
	// From and To are the first and last skipped boundaries (inclusive).
	From, To time.Time
	// Count is how many boundaries From..To holds.
	Count int64
	// Policy names the catch-up policy that skipped them ("all", "latest-only", "skip").
	Policy string
	// EmittedAt is when the ticker published the report, by its clock.
	EmittedAt time.Time
}
