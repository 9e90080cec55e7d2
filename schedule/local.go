package schedule

import (
	"time"

	"github.com/passage-of-time/passage/internal/zone"
)

// resolveFirst returns the instant a local wall time (the Unix seconds of
// the same date and time in UTC) stands for, by the rule RFC 5545 and cron
// share for a time that occurs twice: the first occurrence; for a time the
// clock jumps over, the first instant after the jump.
func resolveFirst(wall int64, loc *time.Location) time.Time {
	first, _, _ := zone.Resolve(wall, loc)
	return time.Unix(first, 0).In(loc)
}

// wallOf returns t's local date and time in loc as the Unix seconds of the
// same date and time in UTC.
func wallOf(t time.Time, loc *time.Location) int64 {
	_, off := t.In(loc).Zone()
	return t.Unix() + int64(off)
}

// dateStart returns the first instant of a local date (it may be
// normalised: day 32 is the next month's first): midnight, or the first
// instant after a gap that swallows it; for a date the zone skipped, the
// first instant of the next date that exists.
func dateStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	return resolveFirst(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), loc)
}

// resolveRFC5545 returns the instant a local wall time stands for by RFC
// 5545 (§3.3.5): the first occurrence of a time shown twice; a time the
// clock jumps over read with the offset in force before the jump (02:30 in
// a one-hour spring-forward gap is 03:30).
func resolveRFC5545(wall int64, loc *time.Location) time.Time {
	first, _, n := zone.Resolve(wall, loc)
	if n == 0 {
		_, before := time.Unix(first-1, 0).In(loc).Zone()
		first = wall - int64(before)
	}
	return time.Unix(first, 0).In(loc)
}
