package schedule

import (
	"fmt"
	"time"
)

// Church says which Easter an Easter spec follows.
type Church int

const (
	// Western is Easter by the Gregorian computus (Catholic and Protestant).
	Western Church = iota
	// Orthodox is Easter by the Julian computus, given as a Gregorian date.
	Orthodox
)

func (c Church) String() string {
	if c == Orthodox {
		return "orthodox"
	}
	return "western"
}

// Easter returns one slot a year, days after Easter Sunday (negative:
// before; Good Friday is -2, Easter Monday 1, Pentecost 49) at the time of
// day at, in loc (nil means UTC). A time of day the clock jumps over or
// repeats resolves as RFC 5545 does (with the offset before the jump; the
// first occurrence).
func Easter(church Church, days int, at Clock, loc *time.Location) (Spec, error) {
	switch {
	case church != Western && church != Orthodox:
		return nil, fmt.Errorf("%w: easter: church %d is neither Western nor Orthodox", ErrInvalidSpec, church)
	case days < -366 || days > 366:
		return nil, fmt.Errorf("%w: easter: %d days from Easter is more than a year", ErrInvalidSpec, days)
	case at.Hour < 0 || at.Hour > 23 || at.Minute < 0 || at.Minute > 59 || at.Second < 0 || at.Second > 59:
		return nil, fmt.Errorf("%w: easter: time of day %s is not a time of day", ErrInvalidSpec, at)
	}
	if loc == nil {
		loc = time.UTC
	}
	return easter{church, days, at, loc}, nil
}

type easter struct {
	church Church
	days   int
	at     Clock
	loc    *time.Location
}

func (e easter) slot(year int) time.Time {
	m, d := EasterSunday(e.church, year)
	wall := time.Date(year, m, d+e.days, e.at.Hour, e.at.Minute, e.at.Second, 0, time.UTC)
	return resolveRFC5545(wall.Unix(), e.loc)
}

func (e easter) Next(t time.Time) time.Time {
	// A year's slot may fall in the previous or next calendar year when
	// days is large; three years around t's cover it.
	for y := t.In(e.loc).Year() - 1; y <= t.In(e.loc).Year()+2; y++ {
		if s := e.slot(y); s.After(t) {
			return s
		}
	}
	return time.Time{}
}

func (e easter) String() string {
	return fmt.Sprintf("@easter %s %+d days %s %s", e.church, e.days, e.at, e.loc)
}

// EasterSunday returns the Gregorian date of Easter Sunday in year (1583
// to 4099 for Western; for Orthodox, years whose Julian calendar is 10 to
// 43 days behind).
//
// Western: the anonymous Gregorian algorithm (Meeus, Astronomical
// Algorithms, ch. 8). Orthodox: Meeus's Julian algorithm, moved to the
// Gregorian calendar by the centuries' difference between the two.
func EasterSunday(church Church, year int) (time.Month, int) {
	if church == Orthodox {
		a, b, c := year%4, year%7, year%19
		d := (19*c + 15) % 30
		e := (2*a + 4*b - d + 34) % 7
		month := (d + e + 114) / 31
		day := (d+e+114)%31 + 1
		shift := year/100 - year/400 - 2 // Julian to Gregorian
		t := time.Date(year, time.Month(month), day+shift, 0, 0, 0, 0, time.UTC)
		return t.Month(), t.Day()
	}
	a := year % 19
	b, c := year/100, year%100
	d, e := b/4, b%4
	f := (b + 8) / 25
	g := (b - f + 1) / 3
	h := (19*a + b - d - g + 15) % 30
	i, k := c/4, c%4
	l := (32 + 2*e + 2*i - h - k) % 7
	m := (a + 11*h + 22*l) / 451
	month := (h + l - 7*m + 114) / 31
	day := (h+l-7*m+114)%31 + 1
	return time.Month(month), day
}
