package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
)

func slots(t *testing.T, s schedule.Spec, from time.Time, n int) []string {
	t.Helper()
	var out []string
	for at := s.Next(from); !at.IsZero() && len(out) < n; at = s.Next(at) {
		out = append(out, at.Format("2006-01-02T15:04:05Z07:00"))
	}
	return out
}

func TestEveryIsAnAbsoluteDurationFromItsAnchor(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	anchor := time.Date(2026, 3, 28, 20, 0, 0, 0, warsaw)
	every8h, err := schedule.Every(8*time.Hour, anchor)
	require.NoError(t, err)
	got := slots(t, every8h, anchor.Add(-time.Hour), 4)
	// Across the spring-forward gap the wall clock shows 9 hours, not 8.
	require.Equal(t, []string{"2026-03-28T20:00:00+01:00", "2026-03-29T05:00:00+02:00", "2026-03-29T13:00:00+02:00", "2026-03-29T21:00:00+02:00"}, got)
	require.Equal(t, "2026-03-29T05:00:00+02:00", every8h.Next(anchor).Format(time.RFC3339), "strictly after")
	require.Equal(t, "2026-03-29T05:00:00+02:00", every8h.Next(anchor.Add(time.Nanosecond)).Format(time.RFC3339))

	// Far from the anchor, k·d stays exact (nanoseconds would overflow).
	far, err := schedule.Every(time.Hour, time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Equal(t, "2200-01-01T01:00:00Z", far.Next(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)).Format(time.RFC3339))

	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "between 1s and"},
		{-time.Hour, "between 1s and"},
		{500 * time.Millisecond, "between 1s and"},
		{1500 * time.Millisecond, "whole number of seconds"},
		{200 * 365 * 24 * time.Hour, "between 1s and"},
	} {
		_, err := schedule.Every(c.d, anchor)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec)
		require.ErrorContains(t, err, c.want, c.d.String())
	}
	_, err = schedule.Every(time.Hour, time.Time{})
	require.ErrorContains(t, err, "anchor (the first slot) is the zero time")
}

func TestCalendar(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	jan1 := time.Date(2026, 1, 1, 0, 0, 0, 0, warsaw)
	for _, c := range []struct {
		name string
		cal  schedule.Calendar
		want []string
	}{
		{"Fridays at 12:00", schedule.Calendar{Every: schedule.Weekly, Start: jan1, Weekdays: []time.Weekday{time.Friday}, At: []schedule.Clock{schedule.At(12, 0)}},
			[]string{"2026-01-02T12:00:00+01:00", "2026-01-09T12:00:00+01:00", "2026-01-16T12:00:00+01:00"}},
		{"2nd Tuesday at 09:30", schedule.Calendar{Every: schedule.Monthly, Start: jan1, Weekdays: []time.Weekday{time.Tuesday}, Nth: 2, At: []schedule.Clock{schedule.At(9, 30)}},
			[]string{"2026-01-13T09:30:00+01:00", "2026-02-10T09:30:00+01:00", "2026-03-10T09:30:00+01:00"}},
		{"last Friday", schedule.Calendar{Every: schedule.Monthly, Start: jan1, Weekdays: []time.Weekday{time.Friday}, Nth: -1, At: []schedule.Clock{schedule.At(17, 0)}},
			[]string{"2026-01-30T17:00:00+01:00", "2026-02-27T17:00:00+01:00", "2026-03-27T17:00:00+01:00"}},
		{"every 3 months on the 31st, skipping short months", schedule.Calendar{Every: schedule.Monthly, Interval: 3, Start: jan1, MonthDays: []int{31}},
			[]string{"2026-01-31T00:00:00+01:00", "2026-07-31T00:00:00+02:00", "2026-10-31T00:00:00+01:00", "2027-01-31T00:00:00+01:00"}},
		{"every 3 months on the 31st or the last day", schedule.Calendar{Every: schedule.Monthly, Interval: 3, Start: jan1, MonthDays: []int{31}, ShortMonths: schedule.LastDayOfShortMonths},
			[]string{"2026-01-31T00:00:00+01:00", "2026-04-30T00:00:00+02:00", "2026-07-31T00:00:00+02:00", "2026-10-31T00:00:00+01:00"}},
		{"the 30th or Feb's last day", schedule.Calendar{Every: schedule.Monthly, Start: time.Date(2028, 1, 1, 0, 0, 0, 0, warsaw), MonthDays: []int{30}, ShortMonths: schedule.LastDayOfShortMonths},
			[]string{"2028-01-30T00:00:00+01:00", "2028-02-29T00:00:00+01:00", "2028-03-30T00:00:00+02:00"}},
		{"the last day of the month", schedule.Calendar{Every: schedule.Monthly, Start: jan1, MonthDays: []int{-1}, At: []schedule.Clock{schedule.At(23, 0)}},
			[]string{"2026-01-31T23:00:00+01:00", "2026-02-28T23:00:00+01:00", "2026-03-31T23:00:00+02:00"}},
		{"weekdays at 09:00 and 17:30", schedule.Calendar{Every: schedule.Daily, Start: jan1, Weekdays: []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}, At: []schedule.Clock{schedule.At(9, 0), schedule.At(17, 30)}},
			[]string{"2026-01-01T09:00:00+01:00", "2026-01-01T17:30:00+01:00", "2026-01-02T09:00:00+01:00", "2026-01-02T17:30:00+01:00", "2026-01-05T09:00:00+01:00"}},
		{"yearly on Feb 29, ending after 2 runs", schedule.Calendar{Every: schedule.Yearly, Start: jan1, Months: []time.Month{time.February}, MonthDays: []int{29}, Count: 2},
			[]string{"2028-02-29T00:00:00+01:00", "2032-02-29T00:00:00+01:00"}},
		{"every 2 weeks ending on a date", schedule.Calendar{Every: schedule.Weekly, Interval: 2, Start: time.Date(2027, 6, 1, 8, 0, 0, 0, warsaw), Until: time.Date(2027, 6, 30, 0, 0, 0, 0, warsaw)},
			[]string{"2027-06-01T08:00:00+02:00", "2027-06-15T08:00:00+02:00", "2027-06-29T08:00:00+02:00"}},
	} {
		s, err := c.cal.Spec()
		require.NoError(t, err, c.name)
		n := len(c.want)
		if c.cal.Count > 0 || !c.cal.Until.IsZero() {
			n++ // ask for one more: the recurrence must have ended
		}
		require.Equal(t, c.want, slots(t, s, c.cal.Start.Add(-time.Second), n), c.name)
	}
	for _, c := range []struct {
		cal  schedule.Calendar
		want string
	}{
		{schedule.Calendar{Start: jan1}, "Every 0 is not Daily"},
		{schedule.Calendar{Every: schedule.Daily}, "Start is the zero time"},
		{schedule.Calendar{Every: schedule.Monthly, Start: jan1, MonthDays: []int{32}}, "day of the month 32"},
		{schedule.Calendar{Every: schedule.Monthly, Start: jan1, Nth: 6, Weekdays: []time.Weekday{time.Monday}}, "Nth 6"},
		{schedule.Calendar{Every: schedule.Weekly, Start: jan1, Nth: 1, Weekdays: []time.Weekday{time.Monday}}, "Nth 1 needs"},
		{schedule.Calendar{Every: schedule.Daily, Start: jan1, At: []schedule.Clock{{Hour: 24}}}, "time of day 24:00:00"},
		{schedule.Calendar{Every: schedule.Yearly, Start: jan1, Months: []time.Month{13}}, "month 13"},
		{schedule.Calendar{Every: schedule.Monthly, Start: jan1, MonthDays: []int{30, 31}, ShortMonths: schedule.LastDayOfShortMonths}, "LastDayOfShortMonths needs exactly one"},
		{schedule.Calendar{Every: schedule.Daily, Start: jan1, Count: 3, At: []schedule.Clock{schedule.At(9, 0), schedule.At(17, 0)}}, "Count with several times of day"},
		{schedule.Calendar{Every: schedule.Daily, Start: jan1, Interval: -1}, "Interval -1"},
	} {
		_, err := c.cal.Spec()
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, c.want)
		require.ErrorContains(t, err, c.want)
	}
}

func TestExceptRemovesTheDatesOfHolidays(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	weekdays, err := schedule.Cron("0 9 * * 1-5", warsaw)
	require.NoError(t, err)
	christmas, err := schedule.Dates(warsaw, schedule.Date{Year: 2026, Month: 12, Day: 24}, schedule.Date{Year: 2026, Month: 12, Day: 25})
	require.NoError(t, err)
	easterMonday, err := schedule.Easter(schedule.Western, 1, schedule.Clock{}, warsaw)
	require.NoError(t, err)
	workdays := schedule.Except(weekdays, warsaw, christmas, easterMonday)
	require.Equal(t, []string{"2026-12-23T09:00:00+01:00", "2026-12-28T09:00:00+01:00"},
		slots(t, workdays, time.Date(2026, 12, 23, 0, 0, 0, 0, warsaw), 2))
	require.Equal(t, []string{"2026-04-03T09:00:00+02:00", "2026-04-07T09:00:00+02:00"},
		slots(t, workdays, time.Date(2026, 4, 3, 0, 0, 0, 0, warsaw), 2), "Easter Monday, April 6")

	// A spec whose every slot is excepted ends instead of spinning.
	mondays, err := schedule.Cron("0 9 * * 1", warsaw)
	require.NoError(t, err)
	require.True(t, schedule.Except(mondays, warsaw, mondays).Next(time.Now()).IsZero())

	_, err = schedule.Dates(warsaw, schedule.Date{Year: 2026, Month: 2, Day: 30})
	require.ErrorContains(t, err, "date 2026-02-30 does not exist")
	_, err = schedule.ParseDate("2026-13-01")
	require.ErrorContains(t, err, `date "2026-13-01": want YYYY-MM-DD`)
}

func TestUnionTakesEachInstantOnce(t *testing.T) {
	t.Parallel()
	a, err := schedule.Cron("0 9 * * *", nil)
	require.NoError(t, err)
	b, err := schedule.Cron("0 9,21 * * *", nil)
	require.NoError(t, err)
	u := schedule.Union(a, b)
	require.Equal(t, []string{"2026-01-01T09:00:00Z", "2026-01-01T21:00:00Z", "2026-01-02T09:00:00Z"},
		slots(t, u, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 3))
	require.Equal(t, "union(CRON_TZ=UTC 0 9 * * *; CRON_TZ=UTC 0 9,21 * * *)", u.String())
}

func TestParse(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, warsaw)
	for _, c := range []struct{ text, first string }{
		{"@every 8h", "2026-01-01T01:00:00+01:00"}, // 00:00 UTC
		{"@every 90m from 2026-01-01T00:00:00+01:00", "2026-01-01T01:30:00+01:00"},
		{"0 12 * * 5", "2026-01-02T12:00:00+01:00"},
		{"30 0 12 * * 5", "2026-01-02T12:00:30+01:00"},
		{"@daily", "2026-01-02T00:00:00+01:00"},
		{"DTSTART;TZID=Europe/Warsaw:20260101T093000\nRRULE:FREQ=MONTHLY;BYDAY=2TU", "2026-01-13T09:30:00+01:00"},
		{`DTSTART;TZID=Europe/Warsaw:20260101T093000\nRRULE:FREQ=MONTHLY;BYDAY=2TU`, "2026-01-13T09:30:00+01:00"},
	} {
		s, err := schedule.Parse(c.text, warsaw)
		require.NoError(t, err, c.text)
		require.Equal(t, c.first, s.Next(from).In(warsaw).Format(time.RFC3339), c.text)
		back, err := schedule.Parse(s.String(), warsaw)
		require.NoError(t, err, "String %q of %q", s.String(), c.text)
		require.Equal(t, s.String(), back.String())
		require.True(t, s.Next(from).Equal(back.Next(from)), c.text)
	}
	for text, want := range map[string]string{
		"":                         "the spec is empty",
		"@every soon":              `interval "soon" is not a duration`,
		"@every 1h since x":        "want @every DURATION",
		"@every 1h from yesterday": `anchor "yesterday"`,
		"@every 0s":                "between 1s and",
		"0 25 * * *":               `hour field "25"`,
	} {
		_, err := schedule.Parse(text, warsaw)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, text)
		require.ErrorContains(t, err, want, text)
	}
}

func TestAFloatingRuleReadsBackInItsZone(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	s, err := schedule.RRule("DTSTART:20260101T093000\nRRULE:FREQ=DAILY", warsaw)
	require.NoError(t, err)
	require.Equal(t, "DTSTART;TZID=Europe/Warsaw:20260101T093000\nRRULE:FREQ=DAILY", s.String())
	back, err := schedule.Parse(s.String(), nil)
	require.NoError(t, err)
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	require.True(t, s.Next(from).Equal(back.Next(from)))
	require.Equal(t, "2026-06-01T09:30:00+02:00", back.Next(from).Format(time.RFC3339))
}
