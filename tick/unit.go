package tick

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Unit is a calendar unit whose boundaries the ticker publishes.
type Unit string

// The units a Ticker can publish.
const (
	Minute  Unit = "minute"
	Hour    Unit = "hour"
	Day     Unit = "day"
	Week    Unit = "week"    // ISO week, starting on Monday
	Month   Unit = "month"   // calendar month
	Quarter Unit = "quarter" // January, April, July, October
	Year    Unit = "year"
)

// Units lists every unit a Ticker can publish, finest first.
func Units() []Unit {
	return []Unit{Minute, Hour, Day, Week, Month, Quarter, Year}
}

// ParseUnit turns a unit's name ("minute", "Hour", " day ") into a Unit.
func ParseUnit(s string) (Unit, error) {
	u := Unit(strings.ToLower(strings.TrimSpace(s)))
	for _, known := range Units() {
		if u == known {
			return u, nil
		}
	}
	return "", fmt.Errorf("%w: %q (want one of minute, hour, day, week, month, quarter, year)", ErrUnknownUnit, s)
}

// String returns the unit's name.
func (u Unit) String() string { return string(u) }

// fixedUnits holds sub-minute units with a fixed length, aligned to the Unix
// epoch. None is exported: tests and benchmarks register one so that dozens
// of real-clock boundaries pass in seconds rather than in half an hour.
var fixedUnits = map[Unit]time.Duration{}

// valid reports whether the ticker knows how to compute u's boundaries.
func (u Unit) valid() bool {
	_, fixed := fixedUnits[u]
	return fixed || slices.Contains(Units(), u)
}

func checkUnit(u Unit) error {
	if !u.valid() {
		return fmt.Errorf("%w: %q", ErrUnknownUnit, string(u))
	}
	return nil
}
