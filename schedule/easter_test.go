package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/teambition/rrule-go"

	"github.com/passage-of-time/passage/schedule"
)

// Western Easter is checked against rrule-go's BYEASTER (python-dateutil's
// algorithm) for every year it covers.
func TestWesternEasterAgreesWithRRuleByEaster(t *testing.T) {
	t.Parallel()
	r, err := rrule.NewRRule(rrule.ROption{Freq: rrule.YEARLY, Byeaster: []int{0}, Dtstart: time.Date(1583, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(4099, 12, 31, 0, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	years := 0
	for _, d := range r.All() {
		m, day := schedule.EasterSunday(schedule.Western, d.Year())
		require.Equal(t, d.Month(), m, "%d", d.Year())
		require.Equal(t, d.Day(), day, "%d", d.Year())
		years++
	}
	require.Equal(t, 4099-1583+1, years)
}

// Orthodox Easter is checked against Gauss's Julian algorithm — a
// different formula from the package's (Meeus) — converted with the
// Julian calendar's own leap rule, and against published dates.
func TestOrthodoxEasterAgreesWithGauss(t *testing.T) {
	t.Parallel()
	for year := 1583; year <= 4099; year++ {
		a, b, c := year%4, year%7, year%19
		d := (19*c + 15) % 30
		e := (2*a + 4*b + 6*d + 6) % 7
		julianDay := 22 + d + e // of March, in the Julian calendar
		want := julianToGregorian(year, julianDay)
		m, day := schedule.EasterSunday(schedule.Orthodox, year)
		require.Equal(t, want.Month(), m, "%d", year)
		require.Equal(t, want.Day(), day, "%d", year)
	}
	for year, date := range map[int]string{2016: "05-01", 2017: "04-16", 2018: "04-08", 2019: "04-28", 2020: "04-19",
		2021: "05-02", 2022: "04-24", 2023: "04-16", 2024: "05-05", 2025: "04-20", 2026: "04-12", 2027: "05-02"} {
		m, day := schedule.EasterSunday(schedule.Orthodox, year)
		require.Equal(t, date, time.Date(year, m, day, 0, 0, 0, 0, time.UTC).Format("01-02"), "%d", year)
	}
}

// julianToGregorian converts "March day" of a Julian year by counting days
// from a common epoch: the Julian Day Number of each calendar.
func julianToGregorian(year, marchDay int) time.Time {
	// The Julian calendar's JDN formula for a date in March (a = 0, m = 0
	// in its usual notation), where day 32 is April 1.
	y := year + 4800
	jdn := marchDay + 365*y + y/4 - 32083 // (153m+2)/5 is 0 for m = 0
	// time's Gregorian calendar: JDN 2440588 is 1970-01-01.
	return time.Date(1970, 1, 1+jdn-2440588, 0, 0, 0, 0, time.UTC)
}

func TestEasterSlots(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	easterMonday, err := schedule.Easter(schedule.Western, 1, schedule.At(10, 0), warsaw)
	require.NoError(t, err)
	goodFriday, err := schedule.Easter(schedule.Orthodox, -2, schedule.At(9, 0), warsaw)
	require.NoError(t, err)
	var got []string
	for at := easterMonday.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, warsaw)); len(got) < 3; at = easterMonday.Next(at) {
		got = append(got, at.Format(time.RFC3339))
	}
	require.Equal(t, []string{"2026-04-06T10:00:00+02:00", "2027-03-29T10:00:00+02:00", "2028-04-17T10:00:00+02:00"}, got)
	require.Equal(t, "2026-04-10T09:00:00+02:00", goodFriday.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, warsaw)).Format(time.RFC3339))

	_, err = schedule.Easter(schedule.Western, 400, schedule.At(10, 0), nil)
	require.ErrorContains(t, err, "400 days from Easter is more than a year")
	_, err = schedule.Easter(schedule.Western, 0, schedule.At(25, 0), nil)
	require.ErrorContains(t, err, "time of day 25:00:00 is not a time of day")
}
