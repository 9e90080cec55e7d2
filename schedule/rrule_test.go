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

// A rule part that means nothing is refused, naming it: COUNT below 1
// (rrule-go reads 0 and negatives as no COUNT, a rule without end), and
// COUNT with UNTIL, which RFC 5545 §3.3.10 forbids in one rule.
func TestRRuleRefusesCountBelowOneAndCountWithUntil(t *testing.T) {
	t.Parallel()
	for rule, want := range map[string]string{
		"FREQ=YEARLY;COUNT=0":                         "COUNT=0: COUNT must be at least 1",
		"FREQ=DAILY;COUNT=-3":                         "COUNT=-3: COUNT must be at least 1",
		"FREQ=DAILY;COUNT=3;UNTIL=20300101T000000Z":   "COUNT=3 and UNTIL=20300101T000000Z: a rule ends by COUNT or by UNTIL, not both",
		"FREQ=WEEKLY;UNTIL=20300101;BYDAY=MO;COUNT=2": "COUNT=2 and UNTIL=20300101: a rule ends by COUNT or by UNTIL, not both",
		"FREQ=MONTHLY;COUNT=0;UNTIL=20300101T000000Z": "COUNT=0: COUNT must be at least 1",
	} {
		text := "DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:" + rule
		_, err := schedule.Parse(text, nil)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, rule)
		require.ErrorContains(t, err, `recurrence line "RRULE:`+rule+`"`, rule)
		require.ErrorContains(t, err, want, rule)
	}
	s, err := schedule.RRule("DTSTART:20260101T090000Z\nRRULE:FREQ=DAILY;COUNT=1", nil)
	require.NoError(t, err, "COUNT=1 is one occurrence")
	require.Equal(t, time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC), s.Next(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)).UTC())
	require.True(t, s.Next(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)).IsZero())

	_, err = schedule.Calendar{Every: schedule.Daily, Start: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC), Count: 3, Until: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}.Spec()
	require.ErrorIs(t, err, schedule.ErrInvalidSpec)
	require.ErrorContains(t, err, "calendar: Count 3 and Until 2030-01-01T00:00:00Z: the recurrence ends by one or the other")
}

// COUNT counts occurrences however far they reach: rrule-go ends a rule
// without UNTIL at DTSTART plus the longest time.Duration (about 292
// years), which cut COUNT=400 yearly from 1850 after 2142. The expectation
// is January 1 of each year from 1850 to 2249, listed by a loop.
func TestRRuleCountReachesBeyond292Years(t *testing.T) {
	t.Parallel()
	var want []string
	for y := 1850; y < 1850+400; y++ {
		want = append(want, time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339))
	}
	s, err := schedule.Parse("DTSTART:18500101T000000Z\nRRULE:FREQ=YEARLY;COUNT=400", nil)
	require.NoError(t, err)
	list := func(from time.Time) []string {
		var got []string
		for at := s.Next(from); !at.IsZero() && len(got) <= 400; at = s.Next(at) {
			got = append(got, at.UTC().Format(time.RFC3339))
		}
		return got
	}
	require.Equal(t, want, list(time.Date(1849, 12, 31, 23, 59, 59, 0, time.UTC)), "all 400, then none")
	require.Equal(t, want[2140-1850+1:], list(time.Date(2140, 1, 1, 0, 0, 0, 0, time.UTC)), "from 2140: 2141 to 2249, then none")

	// The same in a zone with a daily COUNT: 110,000 days from 1950 is
	// past 2251; the last one is DTSTART's wall time on day 109,999.
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	s, err = schedule.Parse("DTSTART;TZID=Europe/Warsaw:19500101T120000\nRRULE:FREQ=DAILY;COUNT=110000", nil)
	require.NoError(t, err)
	last := time.Date(1950, 1, 1+109_999, 12, 0, 0, 0, warsaw)
	require.Equal(t, last, s.Next(last.Add(-time.Hour)))
	require.True(t, s.Next(last).IsZero(), "COUNT=110000 ends at its 110,000th day")
}

// A recurrence set is its RRULEs' and RDATEs' occurrences less the
// EXDATEs: a rule that yields nothing beside an RDATE that does leaves a
// set that fires at the RDATE, and is kept; a set that as a whole yields
// nothing is refused.
func TestARecurrenceSetIsRefusedOnlyWhenItHasNoOccurrence(t *testing.T) {
	t.Parallel()
	const dtstart = "DTSTART;TZID=Europe/Warsaw:20260101T090000\n"
	rdate := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC) // 09:00 in Warsaw
	for _, set := range []string{
		"RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30\nRDATE:20260301T080000Z",
		"RDATE;TZID=Europe/Warsaw:20260301T090000\nRRULE:FREQ=DAILY;UNTIL=20251231T000000Z",
		"RRULE:FREQ=HOURLY;INTERVAL=2;BYHOUR=8,10\nRDATE:20260301T080000Z",
		"RRULE:FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6\nRDATE:20260301T080000Z\nRDATE:20250101T080000Z\nEXDATE:20250101T080000Z",
	} {
		done := make(chan error, 1)
		var s schedule.Spec
		go func() {
			var err error
			s, err = schedule.Parse(dtstart+set, nil)
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err, set)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: Parse does not return", set)
		}
		require.Equal(t, rdate, s.Next(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)).UTC(), "%s: the set's first instant is its RDATE", set)
		require.True(t, s.Next(rdate).IsZero(), "%s: and its last", set)
		require.Equal(t, dtstart+set, s.String(), "the spec keeps the rule that adds nothing")
	}
	// A rule that yields nothing beside one that does: the set is the
	// other rule's.
	s, err := schedule.Parse(dtstart+"RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30\nRRULE:FREQ=DAILY;COUNT=2", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"2026-01-01T08:00:00Z", "2026-01-02T08:00:00Z"},
		showUTC(iterate(s, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))))

	for set, want := range map[string][]string{
		"RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30": {`recurrence line "RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"`, "BYMONTHDAY=30 falls in none of the months BYMONTH=2"},
		"RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30\nRDATE:20260301T080000Z\nEXDATE;TZID=Europe/Warsaw:20260301T090000": {
			`recurrence line "RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"`, "falls in none of the months BYMONTH=2, and the EXDATEs remove every RDATE"},
		"RDATE:20260301T080000Z\nEXDATE:20260301T080000Z":                                     {"has no occurrence: the EXDATEs remove every RDATE"},
		"RDATE:20260301T080000Z,20260302T080000Z\nEXDATE;VALUE=DATE:20260301,20260302":        {"has no occurrence: the EXDATEs remove every RDATE"},
		"RRULE:FREQ=DAILY;COUNT=2\nEXDATE;TZID=Europe/Warsaw:20260101T090000,20260102T090000": {"has no occurrence: the EXDATEs remove every occurrence"},
		"RRULE:FREQ=DAILY;UNTIL=20260102T235959Z\nEXDATE;VALUE=DATE:20260101,20260102":        {"has no occurrence: the EXDATEs remove every occurrence"},
		"": {"has no occurrence: it has no RRULE or RDATE line"},
	} {
		_, err := schedule.Parse(dtstart+set, nil)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, set)
		for _, w := range want {
			require.ErrorContains(t, err, w, set)
		}
	}
}
