package zone

import (
	"math"
	"time"
)

// NoEnd is Segment's end for an offset that never changes again.
const NoEnd = math.MaxInt64

// MaxOffset bounds any zone's distance from UTC (tzdata stays within ±16h,
// local mean time included).
const MaxOffset = 26 * 3600

// Segment returns loc's UTC offset at the Unix second a, in seconds, and
// the first second after a at which it may change (NoEnd when it never
// does): the offset is the same throughout [a, end), and end > a.
//
// time.Time.ZoneBounds gives the end, except where it cannot be trusted.
// After a zone's last listed transition the standard library derives
// offsets from the POSIX rule at the end of the tz file, and the bound it
// reports there after the year's last change is "365 days after the year
// began": a day early in leap years, so from Dec 31 on the end it gives is
// behind the instant asked about — a walk that trusted it would step back
// forever (Europe/Warsaw from 2040-12-31 with the system's tzdata, from
// 2024-12-31 with Go's embedded copy, whose listed transitions stop
// earlier). Such a bound is replaced by a search for the next change.
func Segment(a int64, loc *time.Location) (off, end int64) {
	lt := time.Unix(a, 0).In(loc)
	_, o := lt.Zone()
	_, e := lt.ZoneBounds()
	switch {
	case e.IsZero():
		return int64(o), NoEnd
	case e.Unix() > a:
		return int64(o), e.Unix()
	}
	return int64(o), nextChange(a, o, loc)
}

// nextChange returns the first second after a whose offset differs from
// off, looking up to two days ahead, or the second two days ahead when the
// offset held throughout (a place to look again from, not a change). It
// is only asked where a zone follows its POSIX rule, whose changes are
// months apart, so hourly probes cannot step over two of them.
func nextChange(a int64, off int, loc *time.Location) int64 {
	const probe, horizon = 3600, 2 * 86400
	for lo := a; lo < a+horizon; lo += probe {
		hi := lo + probe
		if offsetAt(hi, loc) == off {
			continue
		}
		for hi-lo > 1 { // offsetAt(lo) == off, offsetAt(hi) != off
			mid := lo + (hi-lo)/2
			if offsetAt(mid, loc) == off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi
	}
	return a + horizon
}

func offsetAt(s int64, loc *time.Location) int {
	_, o := time.Unix(s, 0).In(loc).Zone()
	return o
}

// Resolve returns the instants (Unix seconds) at which loc's wall clock
// shows wall, a local time written as the Unix seconds of the same
// date and time in UTC. n is 1 for an ordinary time, 2 for a time shown
// twice because the clock was set back (first < second), and 0 for a time
// the clock jumped over, where first is the first instant after the jump
// (the instant the clock shows a later time for the first time).
func Resolve(wall int64, loc *time.Location) (first, second int64, n int) {
	after := int64(NoEnd) // the first instant whose wall clock is past wall, once found
	for a := wall - MaxOffset; a <= wall+MaxOffset; {
		off, end := Segment(a, loc)
		if c := wall - off; c >= a && c < end {
			switch n {
			case 0:
				first = c
			case 1:
				second = c
			}
			n++
		} else if n == 0 && after == NoEnd && a+off > wall {
			after = a
		}
		if end == NoEnd {
			break
		}
		a = end
	}
	if n == 0 {
		first = after
	}
	return first, second, n
}
