package tick

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func TestBoundaries(t *testing.T) {
	t.Parallel()
	// Each case: at instant `at` (RFC 3339, any offset), the previous and
	// next boundaries of unit in zone, written as the zone's wall clock
	// shows them; the offset in `prev`/`next` is part of what is checked.
	cases := []struct {
		name, zone string
		unit       Unit
		at         string
		prev, next string
	}{
		{"utc minute", "UTC", Minute, "2026-01-01T10:15:30Z", "2026-01-01T10:15:00Z", "2026-01-01T10:16:00Z"},
		{"utc hour on the boundary", "UTC", Hour, "2026-01-01T10:00:00Z", "2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z"},
		{"utc day after february 28 in a common year", "UTC", Day, "2026-02-28T12:00:00Z", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"},
		{"utc february 29 in a leap year", "UTC", Day, "2028-02-28T23:59:59Z", "2028-02-28T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"utc month of a leap february", "UTC", Month, "2028-02-29T12:00:00Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
		{"utc month end", "UTC", Month, "2026-01-31T23:59:59.999Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"},
		{"utc 30-day month end", "UTC", Month, "2026-04-30T23:59:59Z", "2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z"},
		{"utc quarter end march", "UTC", Quarter, "2026-03-31T23:00:00Z", "2026-01-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"utc quarter end september", "UTC", Quarter, "2026-09-30T23:59:59Z", "2026-07-01T00:00:00Z", "2026-10-01T00:00:00Z"},
		{"utc quarter end december", "UTC", Quarter, "2026-12-31T23:59:59Z", "2026-10-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"utc year", "UTC", Year, "2026-07-01T00:00:00Z", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"utc iso week across new year", "UTC", Week, "2026-01-01T00:00:00Z", "2025-12-29T00:00:00Z", "2026-01-05T00:00:00Z"},
		{"utc iso week on sunday", "UTC", Week, "2026-03-08T23:59:59Z", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},

		{"warsaw spring hour 02:00 is skipped", "Europe/Warsaw", Hour, "2026-03-29T01:30:00+01:00", "2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00"},
		{"warsaw spring day is 23 h", "Europe/Warsaw", Day, "2026-03-29T12:00:00+02:00", "2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00"},
		{"warsaw spring minute before the gap", "Europe/Warsaw", Minute, "2026-03-29T01:59:30+01:00", "2026-03-29T01:59:00+01:00", "2026-03-29T03:00:00+02:00"},
		{"warsaw autumn first 02:00 hour", "Europe/Warsaw", Hour, "2026-10-25T02:30:00+02:00", "2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00"},
		{"warsaw autumn repeated 02:00 hour", "Europe/Warsaw", Hour, "2026-10-25T02:30:00+01:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"},
		{"warsaw autumn day is 25 h", "Europe/Warsaw", Day, "2026-10-25T23:00:00+01:00", "2026-10-25T00:00:00+02:00", "2026-10-26T00:00:00+01:00"},
		{"warsaw month across dst", "Europe/Warsaw", Month, "2026-03-31T12:00:00+02:00", "2026-03-01T00:00:00+01:00", "2026-04-01T00:00:00+02:00"},

		{"new york spring hour 02:00 is skipped", "America/New_York", Hour, "2026-03-08T01:59:59-05:00", "2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00"},
		{"new york spring day", "America/New_York", Day, "2026-03-08T12:00:00-04:00", "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"},
		{"new york autumn 01:00 passes twice", "America/New_York", Hour, "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00"},
		{"new york autumn second 01:00", "America/New_York", Hour, "2026-11-01T01:30:00-05:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"},
		{"new york autumn minute into the repeat", "America/New_York", Minute, "2026-11-01T01:59:30-04:00", "2026-11-01T01:59:00-04:00", "2026-11-01T01:00:00-05:00"},
		{"new york autumn day is 25 h", "America/New_York", Day, "2026-11-01T12:00:00-05:00", "2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00"},
		{"new york week of the autumn change", "America/New_York", Week, "2026-11-01T12:00:00-05:00", "2026-10-26T00:00:00-04:00", "2026-11-02T00:00:00-05:00"},

		{"kolkata +05:30 hour", "Asia/Kolkata", Hour, "2026-05-01T10:59:00+05:30", "2026-05-01T10:00:00+05:30", "2026-05-01T11:00:00+05:30"},
		{"kolkata +05:30 day", "Asia/Kolkata", Day, "2026-05-01T00:10:00+05:30", "2026-05-01T00:00:00+05:30", "2026-05-02T00:00:00+05:30"},
		{"kolkata +05:30 year", "Asia/Kolkata", Year, "2026-12-31T18:30:00Z", "2027-01-01T00:00:00+05:30", "2028-01-01T00:00:00+05:30"},
		{"kathmandu +05:45 hour", "Asia/Kathmandu", Hour, "2026-05-01T10:10:00+05:45", "2026-05-01T10:00:00+05:45", "2026-05-01T11:00:00+05:45"},
		{"kathmandu +05:45 minute", "Asia/Kathmandu", Minute, "2026-05-01T10:10:59.5+05:45", "2026-05-01T10:10:00+05:45", "2026-05-01T10:11:00+05:45"},
		{"kathmandu +05:45 day", "Asia/Kathmandu", Day, "2026-05-01T18:14:59Z", "2026-05-01T00:00:00+05:45", "2026-05-02T00:00:00+05:45"},

		{"lord howe autumn 30-minute fall-back", "Australia/Lord_Howe", Hour, "2026-04-05T01:45:00+11:00", "2026-04-05T01:00:00+11:00", "2026-04-05T02:00:00+10:30"},
		{"lord howe autumn repeated half hour", "Australia/Lord_Howe", Hour, "2026-04-05T01:45:00+10:30", "2026-04-05T01:00:00+11:00", "2026-04-05T02:00:00+10:30"},
		{"lord howe spring 02:00 never shows", "Australia/Lord_Howe", Hour, "2026-10-04T01:59:00+10:30", "2026-10-04T01:00:00+10:30", "2026-10-04T03:00:00+11:00"},
		{"lord howe spring minute jumps 30 minutes", "Australia/Lord_Howe", Minute, "2026-10-04T01:59:30+10:30", "2026-10-04T01:59:00+10:30", "2026-10-04T02:30:00+11:00"},
		{"lord howe autumn day is 24.5 h", "Australia/Lord_Howe", Day, "2026-04-05T12:00:00+10:30", "2026-04-05T00:00:00+11:00", "2026-04-06T00:00:00+10:30"},

		{"sao paulo: midnight does not exist", "America/Sao_Paulo", Day, "2018-11-03T12:00:00-03:00", "2018-11-03T00:00:00-03:00", "2018-11-04T01:00:00-02:00"},
		{"sao paulo: day begins at 01:00", "America/Sao_Paulo", Day, "2018-11-04T12:00:00-02:00", "2018-11-04T01:00:00-02:00", "2018-11-05T00:00:00-02:00"},
		{"sao paulo: hour after the gap", "America/Sao_Paulo", Hour, "2018-11-03T23:30:00-03:00", "2018-11-03T23:00:00-03:00", "2018-11-04T01:00:00-02:00"},
		{"sao paulo: week of the gap", "America/Sao_Paulo", Week, "2018-11-04T12:00:00-02:00", "2018-10-29T00:00:00-03:00", "2018-11-05T00:00:00-02:00"},
		{"apia: a date that never existed", "Pacific/Apia", Day, "2011-12-29T12:00:00-10:00", "2011-12-29T00:00:00-10:00", "2011-12-31T00:00:00+14:00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			loc := mustLoad(t, tc.zone)
			at, err := time.Parse(time.RFC3339Nano, tc.at)
			require.NoError(t, err)
			require.Equal(t, tc.prev, Previous(tc.unit, at, loc).Format(time.RFC3339Nano), "previous")
			require.Equal(t, tc.next, Next(tc.unit, at, loc).Format(time.RFC3339Nano), "next")
		})
	}
}

func TestBoundariesYieldsTheHoursOfADay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		zone, date string
		hours      int
	}{
		{"UTC", "2026-03-29", 24},
		{"Europe/Warsaw", "2026-03-29", 23},
		{"Europe/Warsaw", "2026-10-25", 25},
		{"America/New_York", "2026-03-08", 23},
		{"America/New_York", "2026-11-01", 25},
		{"Australia/Lord_Howe", "2026-10-04", 23}, // 23.5 h long, 02:00 never shows
		{"Australia/Lord_Howe", "2026-04-05", 24}, // 24.5 h long, 01:30–02:00 repeats
		{"America/Sao_Paulo", "2018-11-04", 23},
	}
	for _, tc := range cases {
		t.Run(tc.zone+" "+tc.date, func(t *testing.T) {
			t.Parallel()
			loc := mustLoad(t, tc.zone)
			d, err := time.ParseInLocation(time.DateOnly, tc.date, loc)
			require.NoError(t, err)
			start := Previous(Day, d.Add(12*time.Hour), loc)
			end := Next(Day, start, loc)
			n := 0
			for b := range Boundaries(Hour, start.Add(-time.Nanosecond), end.Add(-time.Nanosecond), loc) {
				require.Zero(t, b.Minute(), "hour boundary %v", b)
				n++
			}
			require.Equal(t, tc.hours, n)
		})
	}
}

func TestUnknownUnit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.True(t, Next("fortnight", now, nil).IsZero())
	require.True(t, Next(" day", now, nil).IsZero(), "units are exact; ParseUnit normalises")
	require.True(t, Previous("fortnight", now, nil).IsZero())
	_, err := ParseUnit("fortnight")
	require.ErrorIs(t, err, ErrUnknownUnit)
	require.ErrorContains(t, err, `"fortnight"`)
	_, err = NewEvent("fortnight", Passage{})
	require.ErrorIs(t, err, ErrUnknownUnit)
	for _, u := range Units() {
		got, err := ParseUnit(" " + string(u) + " ")
		require.NoError(t, err)
		require.Equal(t, u, got)
		ev, err := NewEvent(u, Passage{At: now})
		require.NoError(t, err)
		require.Equal(t, u, ev.Unit())
		require.Equal(t, string(u)+"/2026-01-01T00:00:00Z", ev.ID())
	}
}

// PassageOf gives back what NewEvent was given, for every unit, and
// refuses an Event tick did not build.
func TestPassageOfGivesBackTheEventsPassage(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := Passage{At: at, Since: at.Add(-time.Hour), EmittedAt: at.Add(time.Second), CatchUp: true}
	for _, u := range Units() {
		ev, err := NewEvent(u, p)
		require.NoError(t, err)
		got, ok := PassageOf(ev)
		require.True(t, ok, u)
		require.Equal(t, p, got, u)
	}
	_, ok := PassageOf(foreignEvent{p})
	require.False(t, ok, "an Event of another package's type")
}

// foreignEvent is an Event tick did not build.
type foreignEvent struct{ Passage }

func (foreignEvent) Unit() Unit   { return Minute }
func (e foreignEvent) ID() string { return id(Minute, e.At) }
