package schedule_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
)

// rfc5545Instant is the test's own reading of RFC 5545 §3.3.5 for a local
// time in loc (given as a UTC time with the same fields): the earliest
// instant whose wall clock shows it, or, when the clock jumps over it, the
// time read with the offset in force before the jump.
func rfc5545Instant(wall time.Time, loc *time.Location) int64 {
	w := wall.Unix()
	offsetAt := func(s int64) int64 { _, o := time.Unix(s, 0).In(loc).Zone(); return int64(o) }
	best := int64(0)
	found := false
	for s := w - 30*3600; s <= w+30*3600; s += 900 {
		if i := w - offsetAt(s); i+offsetAt(i) == w && (!found || i < best) {
			best, found = i, true
		}
	}
	if found {
		return best
	}
	for s := w - 30*3600; ; s += 60 {
		if s+offsetAt(s) > w {
			return w - offsetAt(s-60)
		}
	}
}

// referenceRule lists the wall times of a rule written by hand as a
// predicate on local dates, from start's date for the given number of
// days, at the given times of day, and resolves each as RFC 5545 says.
func referenceRule(start time.Time, days int, on func(d time.Time) bool, at []schedule.Clock, loc *time.Location) []int64 {
	var out []int64
	seen := map[int64]bool{}
	y, m, d := start.In(loc).Date()
	for i := range days {
		date := time.Date(y, m, d+i, 0, 0, 0, 0, time.UTC)
		if !on(date) {
			continue
		}
		for _, c := range at {
			wall := date.Add(time.Duration(c.Hour)*time.Hour + time.Duration(c.Minute)*time.Minute + time.Duration(c.Second)*time.Second)
			if s := rfc5545Instant(wall, loc); s >= start.Unix() && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func daysIn(d time.Time) int { return time.Date(d.Year(), d.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day() }

func TestRRuleAgainstAHandWrittenCalendar(t *testing.T) {
	t.Parallel()
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		require.NoError(t, err)
		return loc
	}
	warsaw, newYork, apia, lordHowe := load("Europe/Warsaw"), load("America/New_York"), load("Pacific/Apia"), load("Australia/Lord_Howe")
	for _, c := range []struct {
		name  string
		text  string
		loc   *time.Location
		days  int
		on    func(d time.Time) bool
		at    []schedule.Clock
		limit int       // COUNT: at most this many slots
		until time.Time // UNTIL
		extra time.Time // RDATE, as a wall time
	}{
		{"daily at 02:30 through both DST changes", "DTSTART;TZID=Europe/Warsaw:20260101T023000\nRRULE:FREQ=DAILY",
			warsaw, 400, func(time.Time) bool { return true }, []schedule.Clock{{2, 30, 0}}, 0, time.Time{}, time.Time{}},
		{"daily at 02:30 west of UTC", "DTSTART;TZID=America/New_York:20260101T023000\nRRULE:FREQ=DAILY",
			newYork, 400, func(time.Time) bool { return true }, []schedule.Clock{{2, 30, 0}}, 0, time.Time{}, time.Time{}},
		{"Sundays at 02:15 in half-hour DST", "DTSTART;TZID=Australia/Lord_Howe:20260104T021500\nRRULE:FREQ=WEEKLY;BYDAY=SU",
			lordHowe, 400, func(d time.Time) bool { return d.Weekday() == time.Sunday }, []schedule.Clock{{2, 15, 0}}, 0, time.Time{}, time.Time{}},
		{"2nd Tuesday of the month", "DTSTART;TZID=America/New_York:20260113T093000\nRRULE:FREQ=MONTHLY;BYDAY=2TU",
			newYork, 800, func(d time.Time) bool { return d.Weekday() == time.Tuesday && (d.Day()-1)/7 == 1 }, []schedule.Clock{{9, 30, 0}}, 0, time.Time{}, time.Time{}},
		{"every 3 months on the 31st", "DTSTART;TZID=Europe/Warsaw:20260131T120000\nRRULE:FREQ=MONTHLY;INTERVAL=3;BYMONTHDAY=31",
			warsaw, 1500, func(d time.Time) bool { return d.Day() == 31 && (int(d.Month())-1)%3 == 0 }, []schedule.Clock{{12, 0, 0}}, 0, time.Time{}, time.Time{}},
		{"weekdays at 09:00 except Jan 6", "DTSTART;TZID=Europe/Warsaw:20260102T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR\nEXDATE;TZID=Europe/Warsaw:20260106T090000",
			warsaw, 200, func(d time.Time) bool {
				return d.Weekday() != time.Saturday && d.Weekday() != time.Sunday && !(d.Month() == 1 && d.Day() == 6 && d.Year() == 2026)
			}, []schedule.Clock{{9, 0, 0}}, 0, time.Time{}, time.Time{}},
		{"Apia's missing Dec 30", "DTSTART;TZID=Pacific/Apia:20111201T000000\nRRULE:FREQ=DAILY;COUNT=40",
			apia, 40, func(time.Time) bool { return true }, []schedule.Clock{{0, 0, 0}}, 0, time.Time{}, time.Time{}},
		{"last Friday of the month at 02:00, until 2027", "DTSTART;TZID=Australia/Lord_Howe:20260101T020000\nRRULE:FREQ=MONTHLY;BYDAY=-1FR;UNTIL=20271231T000000Z",
			lordHowe, 800, func(d time.Time) bool { return d.Weekday() == time.Friday && d.Day()+7 > daysIn(d) }, []schedule.Clock{{2, 0, 0}}, 0,
			time.Date(2027, 12, 31, 0, 0, 0, 0, time.UTC), time.Time{}},
		{"Feb 29, three times", "DTSTART;TZID=Europe/Warsaw:20240229T100000\nRRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=3",
			warsaw, 5000, func(d time.Time) bool { return d.Month() == 2 && d.Day() == 29 }, []schedule.Clock{{10, 0, 0}}, 3, time.Time{}, time.Time{}},
		{"hourly through the fall-back", "DTSTART;TZID=Europe/Warsaw:20261024T000000\nRRULE:FREQ=HOURLY;COUNT=60",
			warsaw, 3, func(time.Time) bool { return true }, hours(), 60, time.Time{}, time.Time{}},
		{"twice a day plus an extra date", "DTSTART;TZID=America/New_York:20260301T090000\nRRULE:FREQ=DAILY;BYHOUR=9,17;BYMINUTE=0;COUNT=40\nRDATE;TZID=America/New_York:20260310T120000",
			newYork, 20, func(time.Time) bool { return true }, []schedule.Clock{{9, 0, 0}, {17, 0, 0}}, 40,
			time.Time{}, time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)},
	} {
		spec, err := schedule.RRule(c.text, nil)
		require.NoError(t, err, c.name)
		start := time.Unix(rfc5545Instant(dtstart(t, c.text), c.loc), 0)
		want := referenceRule(start, c.days, c.on, c.at, c.loc)
		if c.limit > 0 && len(want) > c.limit {
			want = want[:c.limit]
		}
		if !c.until.IsZero() {
			for len(want) > 0 && want[len(want)-1] > c.until.Unix() {
				want = want[:len(want)-1]
			}
		}
		if !c.extra.IsZero() { // RDATE adds to the COUNT slots
			want = insertSorted(want, rfc5545Instant(c.extra, c.loc))
		}
		bounded := c.limit > 0 || !c.until.IsZero()
		var got []int64
		for at := spec.Next(start.Add(-time.Second)); !at.IsZero() && len(got) < len(want)+1; at = spec.Next(at) {
			got = append(got, at.Unix())
		}
		if len(got) > len(want) && !bounded {
			got = got[:len(want)] // an unbounded rule goes on past the reference's days
		}
		require.Equal(t, show(want, c.loc), show(got, c.loc), c.name)
	}
}

func hours() []schedule.Clock {
	var out []schedule.Clock
	for h := range 24 {
		out = append(out, schedule.Clock{Hour: h})
	}
	return out
}

func insertSorted(ss []int64, s int64) []int64 {
	for i, x := range ss {
		if s < x {
			return append(ss[:i], append([]int64{s}, ss[i:]...)...)
		}
	}
	return append(ss, s)
}

func dtstart(t *testing.T, text string) time.Time {
	t.Helper()
	var y, mo, d, h, mi, s int
	_, err := fmtSscanf(text, &y, &mo, &d, &h, &mi, &s)
	require.NoError(t, err)
	return time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC)
}

func TestRRuleRejectsBadRulesNamingTheLine(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"RRULE:FREQ=DAILY": "no DTSTART line",
		"DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=SOMETIMES": `line "RRULE:FREQ=SOMETIMES"`,
		"DTSTART;TZID=Mars/Olympus:20260101T090000\nRRULE:FREQ=DAILY":      `line "DTSTART;TZID=Mars/Olympus:20260101T090000"`,
		"DTSTART:2026-01-01\nRRULE:FREQ=DAILY":                             `line "DTSTART:2026-01-01"`,
	} {
		_, err := schedule.RRule(text, nil)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, text)
		require.ErrorContains(t, err, want, text)
	}
}

// fmtSscanf reads the first DTSTART's local date and time.
func fmtSscanf(text string, y, mo, d, h, mi, s *int) (int, error) {
	i := strings.Index(text, "DTSTART")
	line := text[i:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	value := line[strings.LastIndexByte(line, ':')+1:]
	return fmt.Sscanf(value, "%4d%2d%2dT%2d%2d%2d", y, mo, d, h, mi, s)
}
