package schedule_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
)

// TestDSTTable asserts the table in the package doc, in four zones: what
// each kind of spec does with a local time the clock jumps over and with
// one it shows twice. Each row lists the slots within the day around the
// change, in the zone's wall clock with offsets.
func TestDSTTable(t *testing.T) {
	t.Parallel()
	every30m := func(loc *time.Location, day time.Time, _, _ int) (schedule.Spec, error) {
		return schedule.Every(30*time.Minute, day)
	}
	calendar := func(loc *time.Location, day time.Time, hh, mm int) (schedule.Spec, error) {
		return schedule.Calendar{Every: schedule.Daily, Start: day.AddDate(0, 0, -7), At: []schedule.Clock{schedule.At(hh, mm)}}.Spec()
	}
	cronFixed := func(loc *time.Location, _ time.Time, hh, mm int) (schedule.Spec, error) {
		return schedule.Cron(strings.Join([]string{itoa(mm), itoa(hh), "*", "*", "*"}, " "), loc)
	}
	cronInterval := func(loc *time.Location, _ time.Time, _, mm int) (schedule.Spec, error) {
		return schedule.Cron(itoa(mm)+" * * * *", loc)
	}
	for _, z := range []struct {
		zone            string
		gapDay, foldDay string
		gapHH, gapMM    int // a local time in the gap
		foldHH, foldMM  int // a local time shown twice
		every, cal      [2]string
		cronFix, cronIv [2]string
	}{
		{
			zone: "Europe/Warsaw", gapDay: "2026-03-29", foldDay: "2026-10-25", gapHH: 2, gapMM: 30, foldHH: 2, foldMM: 30,
			cal:     [2]string{"03:30+02", "02:30+02"},
			cronFix: [2]string{"03:00+02", "02:30+02"},
			cronIv:  [2]string{"00:30+01 01:30+01 03:30+02 04:30+02 05:30+02", "00:30+02 01:30+02 02:30+02 02:30+01 03:30+01"},
		},
		{
			zone: "America/New_York", gapDay: "2026-03-08", foldDay: "2026-11-01", gapHH: 2, gapMM: 30, foldHH: 1, foldMM: 30,
			cal:     [2]string{"03:30-04", "01:30-04"},
			cronFix: [2]string{"03:00-04", "01:30-04"},
			cronIv:  [2]string{"00:30-05 01:30-05 03:30-04 04:30-04 05:30-04", "00:30-04 01:30-04 01:30-05 02:30-05 03:30-05"},
		},
		{
			// Lord Howe moves by half an hour: 02:00 → 02:30 and 02:00 → 01:30.
			zone: "Australia/Lord_Howe", gapDay: "2026-10-04", foldDay: "2026-04-05", gapHH: 2, gapMM: 15, foldHH: 1, foldMM: 45,
			cal:     [2]string{"02:45+11", "01:45+11"},
			cronFix: [2]string{"02:30+11", "01:45+11"},
			cronIv:  [2]string{"00:15+1030 01:15+1030 03:15+11 04:15+11 05:15+11", "00:45+11 01:45+11 01:45+1030 02:45+1030 03:45+1030"},
		},
		{
			// Apia skipped all of 2011-12-30; it set its clock back an hour
			// on 2012-04-01 at 04:00.
			zone: "Pacific/Apia", gapDay: "2011-12-30", foldDay: "2012-04-01", gapHH: 12, gapMM: 0, foldHH: 3, foldMM: 30,
			cal:     [2]string{"12:00+14", "03:30+14"},
			cronFix: [2]string{"00:00+14 12:00+14", "03:30+14"},
			cronIv:  [2]string{"22:00-10 23:00-10 00:00+14 01:00+14 02:00+14", "00:30+14 01:30+14 02:30+14 03:30+14 03:30+13"},
		},
	} {
		loc, err := time.LoadLocation(z.zone)
		require.NoError(t, err)
		for _, c := range []struct {
			name string
			spec func(loc *time.Location, day time.Time, hh, mm int) (schedule.Spec, error)
			want [2]string
		}{
			{"calendar", calendar, z.cal},
			{"cron, fixed hour", cronFixed, z.cronFix},
			{"cron, hour *", cronInterval, z.cronIv},
		} {
			for k, day := range []string{z.gapDay, z.foldDay} {
				hh, mm := z.gapHH, z.gapMM
				if k == 1 {
					hh, mm = z.foldHH, z.foldMM
				}
				d, err := time.ParseInLocation(time.DateOnly, day, loc)
				require.NoError(t, err)
				spec, err := c.spec(loc, d, hh, mm)
				require.NoError(t, err)
				// The slots in the 24 hours from the start of the change's date
				// (for Apia's missing day, from Dec 29 at noon), or in five
				// hours for the hourly cron.
				from := d.Add(-time.Nanosecond)
				if z.zone == "Pacific/Apia" && k == 0 {
					from = time.Date(2011, 12, 29, 12, 0, 0, 0, loc)
				}
				until := from.Add(24*time.Hour + time.Second)
				if c.name == "cron, hour *" {
					if z.zone == "Pacific/Apia" && k == 0 {
						from = time.Date(2011, 12, 29, 21, 30, 0, 0, loc)
					}
					until = from.Add(5 * time.Hour)
				}
				var got []string
				for at := spec.Next(from); !at.IsZero() && at.Before(until); at = spec.Next(at) {
					got = append(got, strings.TrimSuffix(strings.TrimSuffix(at.Format("15:04-0700"), "00"), ":"))
				}
				require.Equal(t, c.want[k], strings.Join(got, " "), "%s, %s, %s on %s", z.zone, c.name, []string{"gap", "fold"}[k], day)
			}
		}
		// Every 30 minutes is absolute: two slots an hour, through both.
		for _, day := range []string{z.gapDay, z.foldDay} {
			d, err := time.ParseInLocation(time.DateOnly, day, loc)
			require.NoError(t, err)
			spec, err := every30m(loc, d, 0, 0)
			require.NoError(t, err)
			prev := spec.Next(d.Add(-time.Nanosecond))
			for range 200 {
				next := spec.Next(prev)
				require.Equal(t, 30*time.Minute, next.Sub(prev), "%s every 30m on %s", z.zone, day)
				prev = next
			}
		}
	}
}

func itoa(n int) string {
	return strings.TrimLeft(time.Date(0, 1, 1, 0, 0, n, 0, time.UTC).Format("05"), "0") + map[bool]string{true: "0"}[n == 0]
}

// An EXDATE or RDATE written as a local time of the rule's zone stands
// for that wall time, also in a gap: it excludes, or adds, the slot RFC
// 5545 places there.
func TestDatesInAGapMatchTheRulesOccurrences(t *testing.T) {
	t.Parallel()
	ex, err := schedule.RRule("DTSTART;TZID=Europe/Warsaw:20260327T023000\nRRULE:FREQ=DAILY;COUNT=4\nEXDATE;TZID=Europe/Warsaw:20260329T023000", nil)
	require.NoError(t, err)
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	var got []string
	for at := ex.Next(time.Date(2026, 3, 27, 0, 0, 0, 0, warsaw)); !at.IsZero(); at = ex.Next(at) {
		got = append(got, at.In(warsaw).Format(time.RFC3339))
	}
	require.Equal(t, []string{"2026-03-27T02:30:00+01:00", "2026-03-28T02:30:00+01:00", "2026-03-30T02:30:00+02:00"}, got, "the 29th, in the gap, is excluded")

	rd, err := schedule.RRule("DTSTART;TZID=America/New_York:20260301T120000\nRRULE:FREQ=DAILY;COUNT=1\nRDATE;TZID=America/New_York:20260308T023000", nil)
	require.NoError(t, err)
	newYork, _ := time.LoadLocation("America/New_York")
	extra := rd.Next(time.Date(2026, 3, 2, 0, 0, 0, 0, newYork))
	require.Equal(t, "2026-03-08T03:30:00-04:00", extra.In(newYork).Format(time.RFC3339), "02:30 in the gap, with the offset before it")

	utc, err := schedule.RRule("DTSTART;TZID=Europe/Warsaw:20260301T120000\nRRULE:FREQ=DAILY;COUNT=1\nRDATE:20261025T013000Z", nil)
	require.NoError(t, err)
	at := utc.Next(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	require.Equal(t, "2026-10-25T01:30:00Z", at.UTC().Format(time.RFC3339), "a UTC instant in the fold's second pass stays itself")
}

// UNTIL bounds a rule by the instants its occurrences are placed at. In
// Warsaw on 2026-10-25 the clock shows 02:00-03:00 twice (CEST, then
// CET) and RFC 5545 places a repeated time at its first pass: an UNTIL
// in the second pass keeps the first pass's occurrences, all before it.
// On 2026-03-29 it skips 02:00-03:00, and 02:30 is placed at 03:30 CEST:
// an UNTIL at 03:15 CEST drops it. Reference: the rule without UNTIL,
// cut at UNTIL.
func TestUntilBoundsTheInstantsAroundDST(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	for _, c := range []struct {
		day   string
		until []string
	}{
		{"20261025", []string{"20261025T001500Z", "20261025T004500Z", "20261025T010000Z", "20261025T011500Z", "20261025T014500Z", "20261025T021500", "20261025T024500"}},
		{"20260329", []string{"20260329T004500Z", "20260329T010000Z", "20260329T011500Z", "20260329T014500Z", "20260329T023000", "20260329T031500"}},
	} {
		rule := "DTSTART;TZID=Europe/Warsaw:" + c.day + "T013000\nRRULE:FREQ=MINUTELY;INTERVAL=15"
		open := mustSpec(t)(schedule.RRule(rule, nil))
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, u := range c.until {
			bounded := mustSpec(t)(schedule.RRule(rule+";UNTIL="+u, nil))
			var limit time.Time
			if v, utc := strings.CutSuffix(u, "Z"); utc {
				limit, err = time.Parse("20060102T150405", v)
			} else {
				limit, err = time.ParseInLocation("20060102T150405", u, warsaw)
				limit = firstPass(limit, warsaw)
			}
			require.NoError(t, err)
			var want []string
			for at := open.Next(from); !at.After(limit); at = open.Next(at) {
				want = append(want, at.In(warsaw).Format(time.RFC3339))
			}
			var got []string
			for at := bounded.Next(from); !at.IsZero() && len(got) < 100; at = bounded.Next(at) {
				got = append(got, at.In(warsaw).Format(time.RFC3339))
			}
			require.Equal(t, want, got, "UNTIL=%s", u)
		}
	}
}

// firstPass returns the first instant whose Warsaw wall clock shows t's
// wall time (or, in a gap, reads it with the offset before the gap): how
// RFC 5545 places a local time.
func firstPass(t time.Time, loc *time.Location) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	for _, off := range []time.Duration{2 * time.Hour, time.Hour} {
		at := time.Date(y, mo, d, h, mi, s, 0, time.UTC).Add(-off)
		if at.In(loc).Hour() == h && at.In(loc).Minute() == mi {
			return at
		}
	}
	return time.Date(y, mo, d, h, mi, s, 0, time.UTC).Add(-time.Hour) // in the gap: CET, the offset before it
}
