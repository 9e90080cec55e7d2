package schedule_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
)

// cronFields is the test's own reading of the plain cron expressions it
// uses (lists, ranges, steps and *; no names): the reference must not
// share the parser or the evaluator under test.
type cronFields struct {
	sets         [6]map[int]bool // second, minute, hour, day of month, month, day of week
	domAny       bool
	dowAny       bool
	hourInterval bool
}

func readCron(t *testing.T, expr string) cronFields {
	t.Helper()
	f := strings.Fields(expr)
	if len(f) == 5 {
		f = append([]string{"0"}, f...)
	}
	require.Len(t, f, 6, expr)
	bounds := [6][2]int{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}}
	var c cronFields
	for i, field := range f {
		c.sets[i] = map[int]bool{}
		for _, part := range strings.Split(field, ",") {
			rng, stepText, hasStep := strings.Cut(part, "/")
			step := 1
			if hasStep {
				step, _ = strconv.Atoi(stepText)
			}
			lo, hi := bounds[i][0], bounds[i][1]
			if rng != "*" {
				a, b, isRange := strings.Cut(rng, "-")
				lo, _ = strconv.Atoi(a)
				if isRange {
					hi, _ = strconv.Atoi(b)
				} else if !hasStep {
					hi = lo
				}
			}
			for v := lo; v <= hi; v += step {
				c.sets[i][v] = true
			}
		}
	}
	c.domAny, c.dowAny = f[3] == "*", f[5] == "*"
	c.hourInterval = f[2] == "*" || strings.HasPrefix(f[2], "*/")
	return c
}

func (c cronFields) matches(w time.Time) bool {
	dom, dow := c.sets[3][w.Day()], c.sets[5][int(w.Weekday())]
	day := dom && dow
	if !c.domAny && !c.dowAny {
		day = dom || dow
	}
	return day && c.sets[0][w.Second()] && c.sets[1][w.Minute()] && c.sets[2][w.Hour()] && c.sets[4][int(w.Month())]
}

// wallClock holds loc's wall clock for every second of a window (as the
// Unix seconds of the same date and time in UTC), shared by the specs
// checked against it.
type wallClock struct {
	from  int64
	walls []int64
}

func readWallClock(loc *time.Location, from, to int64) wallClock {
	wc := wallClock{from: from}
	for s := from; s <= to; s++ {
		_, off := time.Unix(s, 0).In(loc).Zone()
		wc.walls = append(wc.walls, s+int64(off))
	}
	return wc
}

// referenceCron steps through the window a second at a time and watches
// the wall clock: an interval-hour spec fires whenever the wall clock shows
// a matching time; a fixed-hour spec fires when it shows a matching time
// for the first time, and once after a jump over one or more matching
// times. Slots are reported from the window's second day on (the first
// day only shows which wall times were seen).
func referenceCron(c cronFields, wc wallClock) []int64 {
	var out []int64
	match := func(w int64) bool { return c.matches(time.Unix(w, 0).UTC()) }
	highest := wc.walls[0]
	for i := 1; i < len(wc.walls); i++ {
		w, prev, s := wc.walls[i], wc.walls[i-1], wc.from+int64(i)
		var fire bool
		if c.hourInterval {
			fire = match(w)
		} else {
			fire = w > highest && match(w)
			for skipped := max(prev, highest) + 1; !fire && skipped < w; skipped++ {
				fire = match(skipped) // the clock jumped over it
			}
		}
		highest = max(highest, w)
		if fire && s > wc.from+86400 {
			out = append(out, s)
		}
	}
	return out
}

func TestCronAgainstTheWallClock(t *testing.T) {
	t.Parallel()
	exprs := []string{
		"30 2 * * *",        // in the gap and in the repeated hour
		"0 2 * * *",         // the gap's first minute
		"0,30 * * * *",      // the hour an interval: both passes
		"*/20 1-3 * * *",    // fixed hours, several minutes
		"15 0 * * 1-5",      // weekdays past midnight
		"0 0 1,15 * 0",      // day of month or Sunday
		"0 */2 * * *",       // an hourly step
		"*/45 * * * * *",    // 6 fields
		"0 12 * * *",        // noon: untouched by DST
		"59 23 31 12 *",     // new year's eve
		"0 0 * * *",         // midnight, which Sao Paulo and Apia skipped
		"30 3 * * 6",        // a Saturday in Apia's skipped week
		"0 30 1 * * *",      // Lord Howe's half-hour fold
		"45 2 29 2 *",       // Feb 29
		"0 1 * * *",         // Monrovia's 1972 shift of 44 minutes 30 seconds
		"*/15 * 30,31 12 *", // Apia's missing Dec 30
	}
	windows := []struct{ zone, from string }{
		{"Europe/Warsaw", "2026-03-27T00:00:00Z"},
		{"Europe/Warsaw", "2026-10-23T00:00:00Z"},
		{"America/New_York", "2026-03-06T00:00:00Z"},
		{"America/New_York", "2026-10-30T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-04-03T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-10-02T00:00:00Z"},
		{"Pacific/Apia", "2011-12-28T00:00:00Z"},
		{"America/Sao_Paulo", "2018-11-02T00:00:00Z"},
		{"Africa/Monrovia", "1972-01-05T00:00:00Z"},
		{"Europe/Warsaw", "2040-12-29T00:00:00Z"}, // where ZoneBounds misleads
		{"UTC", "2028-02-27T00:00:00Z"},
	}
	for _, w := range windows {
		loc, err := time.LoadLocation(w.zone)
		require.NoError(t, err)
		start, err := time.Parse(time.RFC3339, w.from)
		require.NoError(t, err)
		wc := readWallClock(loc, start.Unix(), start.Unix()+4*86400)
		from, to := start.Unix()+86400, start.Unix()+4*86400
		for _, expr := range exprs {
			spec, err := schedule.Cron(expr, loc)
			require.NoError(t, err, expr)
			want := referenceCron(readCron(t, expr), wc)
			var got []int64
			for at := spec.Next(time.Unix(from, 0)); !at.IsZero() && at.Unix() <= to; at = spec.Next(at) {
				got = append(got, at.Unix())
			}
			require.Equal(t, show(want, loc), show(got, loc), "%s in %s from %s", expr, w.zone, w.from)
		}
	}
}

func show(ss []int64, loc *time.Location) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = time.Unix(s, 0).In(loc).Format("2006-01-02T15:04:05Z07:00:00")
	}
	return out
}

func TestCronRejectsBadSpecsNamingThePart(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string]string{
		"61 * * * *":                     `minute field "61"`,
		"0 24 * * *":                     `hour field "24"`,
		"0 0 0 * *":                      `day of month field "0"`,
		"0 0 1 13 *":                     `month field "13"`,
		"0 0 * * 8":                      `day of week field "8"`,
		"0 0 30 2 *":                     "day of month and month never meet",
		"* * *":                          "expected 5 to 6 fields",
		"CRON_TZ=Mars/Olympus 0 * * * *": "CRON_TZ=Mars/Olympus is not a time zone",
		"@every 5m":                      "@every is an interval",
	} {
		_, err := schedule.Cron(expr, nil)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, expr)
		require.ErrorContains(t, err, want, expr)
	}
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	_, err = schedule.Cron("CRON_TZ=America/New_York 0 9 * * *", warsaw)
	require.ErrorContains(t, err, "names zone America/New_York, and Europe/Warsaw was given too")
}

// Vixie cron takes 7 for Sunday in the day of week, alone, in lists and
// at the end of ranges; so does Cron. The expectation is a hand-written
// calendar: each midnight of eight weeks whose weekday is listed.
func TestCronTakesSevenForSunday(t *testing.T) {
	t.Parallel()
	sun, mon, wed, fri, sat := time.Sunday, time.Monday, time.Wednesday, time.Friday, time.Saturday
	for expr, days := range map[string][]time.Weekday{
		"0 0 * * 7":     {sun},
		"0 0 * * 5-7":   {fri, sat, sun},
		"0 0 * * 1,7":   {mon, sun},
		"0 0 * * 1-7/2": {mon, wed, fri, sun},
		"0 0 0 * * 7":   {sun}, // 6 fields
		"0 0 * * 7,5-6": {fri, sat, sun},
		"0 0 * * 0-7":   {sun, mon, time.Tuesday, wed, time.Thursday, fri, sat},
	} {
		spec, err := schedule.Cron(expr, nil)
		require.NoError(t, err, expr)
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a Thursday
		var want, got []string
		for d := range 8 * 7 {
			day := from.AddDate(0, 0, d+1)
			if slices.Contains(days, day.Weekday()) {
				want = append(want, day.Format("2006-01-02 Mon"))
			}
		}
		for at := spec.Next(from); len(got) < len(want); at = spec.Next(at) {
			got = append(got, at.Format("2006-01-02 Mon"))
		}
		require.Equal(t, want, got, expr)
		require.Equal(t, "CRON_TZ=UTC "+expr, spec.String(), "the spec keeps the 7 it was written with")
		back, err := schedule.Parse(spec.String(), nil)
		require.NoError(t, err, expr)
		require.Equal(t, spec.Next(from), back.Next(from), expr)
	}
	// A restricted day of month still combines with the day of week by
	// "or": the 13th, and every Sunday.
	spec, err := schedule.Cron("0 0 13 * 7", nil)
	require.NoError(t, err)
	var got []string
	for at := spec.Next(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)); len(got) < 5; at = spec.Next(at) {
		got = append(got, at.Format("2006-01-02 Mon"))
	}
	require.Equal(t, []string{"2026-02-08 Sun", "2026-02-13 Fri", "2026-02-15 Sun", "2026-02-22 Sun", "2026-03-01 Sun"}, got)

	for expr, want := range map[string]string{
		"0 0 * * 8":     `day of week field "8": end of range (8) above maximum (6): 8 (days are 0 to 7, both Sunday, or SUN to SAT)`,
		"0 0 * * 5-8":   `day of week field "5-8"`,
		"0 0 * * 5-7,9": `day of week field "5-7,9"`,
	} {
		_, err := schedule.Cron(expr, nil)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, expr)
		require.ErrorContains(t, err, want, expr)
	}
}
