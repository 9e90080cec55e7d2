package schedule_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
)

// utc is an instant written out by hand in UTC.
func utc(y int, m time.Month, d, h, mi int) time.Time {
	return time.Date(y, m, d, h, mi, 0, 0, time.UTC)
}

// An EXDATE removes the occurrences it names (RFC 5545 §3.8.5.1): one
// written in UTC or in a zone other than DTSTART's names an instant and
// removes the occurrence placed there, whatever zone the occurrence was
// written in; one written as a local time of DTSTART's zone (floating, or
// DTSTART's TZID) removes the occurrence of that wall time, and an RDATE
// written in UTC or another zone at the instant that wall time stands
// for; VALUE=DATE removes the occurrences on that date in DTSTART's zone.
//
// The reference is written out by hand: all lists, in UTC, the slots of
// the text without its EXDATE lines (checked against the spec too, so the
// list is right), and excluded the slots the EXDATE lines name. The spec
// must give all minus excluded. The offsets used:
//
//	Europe/Warsaw     CET +1, CEST +2; 2026-03-29 02:00 CET → 03:00 CEST (01:00Z),
//	                  2026-10-25 03:00 CEST → 02:00 CET (01:00Z)
//	America/New_York  EST −5, EDT −4; 2026-03-08 02:00 EST → 03:00 EDT (07:00Z),
//	                  2026-11-01 02:00 EDT → 01:00 EST (06:00Z)
//	Europe/London     GMT 0 on 2026-11-01 (BST ended 2026-10-25)
//	Asia/Tokyo        JST +9, no DST
func TestExdateExcludesTheInstantItNames(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	for _, c := range []struct {
		name     string
		text     string
		loc      *time.Location // for a floating DTSTART
		from, to time.Time      // the slots in (from, to]
		all      []time.Time    // the slots without the EXDATE lines
		excluded []time.Time    // the slots the EXDATE lines name
	}{
		{
			name: "RDATE in UTC, EXDATE with DTSTART's TZID (the same instant)",
			text: "DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=MONTHLY;COUNT=2\nRDATE:20260301T080000Z,20260302T080000Z\nEXDATE;TZID=Europe/Warsaw:20260301T090000",
			from: utc(2025, 12, 31, 0, 0), to: utc(2026, 12, 31, 0, 0),
			// 09:00 CET is 08:00Z.
			all:      []time.Time{utc(2026, 1, 1, 8, 0), utc(2026, 2, 1, 8, 0), utc(2026, 3, 1, 8, 0), utc(2026, 3, 2, 8, 0)},
			excluded: []time.Time{utc(2026, 3, 1, 8, 0)},
		},
		{
			name: "RDATE in UTC, floating EXDATE",
			text: "DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=MONTHLY;COUNT=2\nRDATE:20260301T080000Z,20260302T080000Z\nEXDATE:20260301T090000",
			from: utc(2025, 12, 31, 0, 0), to: utc(2026, 12, 31, 0, 0),
			all:      []time.Time{utc(2026, 1, 1, 8, 0), utc(2026, 2, 1, 8, 0), utc(2026, 3, 1, 8, 0), utc(2026, 3, 2, 8, 0)},
			excluded: []time.Time{utc(2026, 3, 1, 8, 0)},
		},
		{
			name: "RDATE with a third zone's TZID, EXDATE in UTC",
			text: "DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=DAILY;COUNT=1\nRDATE;TZID=America/New_York:20260310T120000,20260311T120000\nEXDATE:20260310T160000Z",
			from: utc(2025, 12, 31, 0, 0), to: utc(2026, 12, 31, 0, 0),
			// 12:00 EDT is 16:00Z.
			all:      []time.Time{utc(2026, 1, 1, 8, 0), utc(2026, 3, 10, 16, 0), utc(2026, 3, 11, 16, 0)},
			excluded: []time.Time{utc(2026, 3, 10, 16, 0)},
		},
		{
			name: "RDATEs in UTC around Warsaw's gap, EXDATE with TZID of a skipped time",
			text: "DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=DAILY;COUNT=1\nRDATE:20260329T003000Z,20260329T013000Z\nEXDATE;TZID=Europe/Warsaw:20260329T023000",
			from: utc(2025, 12, 31, 0, 0), to: utc(2026, 12, 31, 0, 0),
			// 02:30 is skipped: read with CET, the offset before the
			// jump, it is 01:30Z (03:30 CEST).
			all:      []time.Time{utc(2026, 1, 1, 8, 0), utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 30)},
			excluded: []time.Time{utc(2026, 3, 29, 1, 30)},
		},
		{
			name: "RDATEs with DTSTART's TZID, one skipped, EXDATE in UTC",
			text: "DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=DAILY;COUNT=1\nRDATE;TZID=Europe/Warsaw:20260329T013000,20260329T023000,20260329T033000\nEXDATE:20260329T013000Z",
			from: utc(2025, 12, 31, 0, 0), to: utc(2026, 12, 31, 0, 0),
			// 01:30 CET is 00:30Z; 02:30, skipped, read with CET, and 03:30
			// CEST are both 01:30Z.
			all:      []time.Time{utc(2026, 1, 1, 8, 0), utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 30)},
			excluded: []time.Time{utc(2026, 3, 29, 1, 30)},
		},
		{
			name: "RDATEs in UTC in both passes of Warsaw's fold, EXDATE with TZID of the repeated time",
			text: "DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=DAILY;COUNT=1\nRDATE:20261025T003000Z,20261025T013000Z\nEXDATE;TZID=Europe/Warsaw:20261025T023000",
			from: utc(2025, 12, 31, 0, 0), to: utc(2026, 12, 31, 0, 0),
			// 02:30 is shown twice, at 00:30Z (CEST) and 01:30Z (CET); the
			// EXDATE names the first.
			all:      []time.Time{utc(2026, 1, 1, 8, 0), utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30)},
			excluded: []time.Time{utc(2026, 10, 25, 0, 30)},
		},
		{
			name: "EXDATE in UTC against hourly Warsaw occurrences through the fold",
			text: "DTSTART;TZID=Europe/Warsaw:20261025T003000\nRRULE:FREQ=HOURLY;COUNT=5\nEXDATE:20261025T013000Z,20261025T023000Z",
			from: utc(2026, 10, 24, 0, 0), to: utc(2026, 10, 27, 0, 0),
			// Wall times 00:30, 01:30, 02:30 (CEST, its first pass), 03:30
			// and 04:30 (CET). 01:30Z is 02:30 CET, the second pass: no
			// occurrence is there. 02:30Z is 03:30 CET.
			all:      []time.Time{utc(2026, 10, 24, 22, 30), utc(2026, 10, 24, 23, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 2, 30), utc(2026, 10, 25, 3, 30)},
			excluded: []time.Time{utc(2026, 10, 25, 2, 30)},
		},
		{
			name: "EXDATE in UTC against hourly Warsaw occurrences through the gap",
			text: "DTSTART;TZID=Europe/Warsaw:20260329T003000\nRRULE:FREQ=HOURLY\nEXDATE:20260329T013000Z",
			from: utc(2026, 3, 28, 23, 0), to: utc(2026, 3, 29, 3, 0),
			// Wall times 00:30, 01:30 (CET), 02:30 (skipped: with CET,
			// 01:30Z), 03:30 (CEST: 01:30Z too) and 04:30: one slot at
			// 01:30Z, which the EXDATE names.
			all:      []time.Time{utc(2026, 3, 28, 23, 30), utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 30), utc(2026, 3, 29, 2, 30)},
			excluded: []time.Time{utc(2026, 3, 29, 1, 30)},
		},
		{
			name: "EXDATE in a third zone against hourly New York occurrences through the fold",
			text: "DTSTART;TZID=America/New_York:20261101T003000\nRRULE:FREQ=HOURLY;COUNT=4\nEXDATE;TZID=Europe/London:20261101T063000,20261101T073000",
			from: utc(2026, 10, 31, 0, 0), to: utc(2026, 11, 3, 0, 0),
			// Wall times 00:30 (EDT), 01:30 (EDT, its first pass), 02:30 and
			// 03:30 (EST). 06:30 GMT is 01:30 EST, the second pass: no
			// occurrence; 07:30 GMT is 02:30 EST.
			all:      []time.Time{utc(2026, 11, 1, 4, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 7, 30), utc(2026, 11, 1, 8, 30)},
			excluded: []time.Time{utc(2026, 11, 1, 7, 30)},
		},
		{
			name: "EXDATE in a third zone against hourly New York occurrences through the gap",
			text: "DTSTART;TZID=America/New_York:20260308T003000\nRRULE:FREQ=HOURLY;COUNT=5\nEXDATE;TZID=Asia/Tokyo:20260308T163000",
			from: utc(2026, 3, 7, 0, 0), to: utc(2026, 3, 10, 0, 0),
			// Wall times 00:30, 01:30 (EST), 02:30 (skipped: with EST,
			// 07:30Z), 03:30 (EDT: 07:30Z too) and 04:30 (EDT). 16:30 JST
			// is 07:30Z.
			all:      []time.Time{utc(2026, 3, 8, 5, 30), utc(2026, 3, 8, 6, 30), utc(2026, 3, 8, 7, 30), utc(2026, 3, 8, 8, 30)},
			excluded: []time.Time{utc(2026, 3, 8, 7, 30)},
		},
		{
			name: "EXDATE in New York against daily Warsaw occurrences while only the US has DST",
			text: "DTSTART;TZID=Europe/Warsaw:20260309T090000\nRRULE:FREQ=DAILY\nEXDATE;TZID=America/New_York:20260310T040000,20260311T030000",
			from: utc(2026, 3, 8, 0, 0), to: utc(2026, 3, 12, 12, 0),
			// 09:00 CET is 08:00Z, 04:00 EDT; 03:00 EDT (07:00Z) is no
			// occurrence.
			all:      []time.Time{utc(2026, 3, 9, 8, 0), utc(2026, 3, 10, 8, 0), utc(2026, 3, 11, 8, 0), utc(2026, 3, 12, 8, 0)},
			excluded: []time.Time{utc(2026, 3, 10, 8, 0)},
		},
		{
			name: "floating EXDATE of a skipped time, floating DTSTART in loc",
			text: "DTSTART:20260327T023000\nRRULE:FREQ=DAILY;COUNT=4\nEXDATE:20260329T023000",
			loc:  warsaw,
			from: utc(2026, 3, 26, 0, 0), to: utc(2026, 4, 1, 0, 0),
			// 02:30 CET is 01:30Z; on the 29th it is skipped, read with CET:
			// 01:30Z (03:30 CEST); 02:30 CEST is 00:30Z.
			all:      []time.Time{utc(2026, 3, 27, 1, 30), utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30)},
			excluded: []time.Time{utc(2026, 3, 29, 1, 30)},
		},
		{
			name: "floating EXDATE of a repeated time names its first pass, not a UTC RDATE in the second",
			text: "DTSTART;TZID=Europe/Warsaw:20261024T023000\nRRULE:FREQ=DAILY;COUNT=3\nRDATE:20261025T013000Z\nEXDATE:20261025T023000",
			from: utc(2026, 10, 23, 0, 0), to: utc(2026, 10, 28, 0, 0),
			// 02:30 CEST is 00:30Z, the fold's first pass at 00:30Z, 02:30
			// CET 01:30Z.
			all:      []time.Time{utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30), utc(2026, 10, 26, 1, 30)},
			excluded: []time.Time{utc(2026, 10, 25, 0, 30)},
		},
		{
			// Written in DTSTART's zone, the EXDATE and the occurrences
			// compare as wall times: 02:30 excludes the occurrence of 02:30,
			// not the one of 03:30 that RFC 5545 places at the same instant.
			name: "EXDATE with DTSTART's TZID of a skipped time against hourly occurrences",
			text: "DTSTART;TZID=Europe/Warsaw:20260329T003000\nRRULE:FREQ=HOURLY;COUNT=5\nEXDATE;TZID=Europe/Warsaw:20260329T023000",
			from: utc(2026, 3, 28, 0, 0), to: utc(2026, 3, 31, 0, 0),
			all:      []time.Time{utc(2026, 3, 28, 23, 30), utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 30), utc(2026, 3, 29, 2, 30)},
			excluded: nil,
		},
		{
			name: "VALUE=DATE excludes a New York date, the fall-back day, by its local date",
			text: "DTSTART;TZID=America/New_York:20261031T003000\nRRULE:FREQ=DAILY;BYHOUR=0,23;BYMINUTE=30;COUNT=6\nRDATE:20261101T020000Z,20261102T033000Z\nEXDATE;VALUE=DATE:20261101",
			from: utc(2026, 10, 30, 0, 0), to: utc(2026, 11, 5, 0, 0),
			// 00:30 and 23:30 on Oct 31 (EDT), Nov 1 (00:30 EDT, 23:30 EST)
			// and Nov 2 (EST); the RDATEs are Oct 31 22:00 EDT (a UTC date
			// of Nov 1) and Nov 1 22:30 EST (a UTC date of Nov 2).
			all: []time.Time{
				utc(2026, 10, 31, 4, 30), utc(2026, 11, 1, 2, 0), utc(2026, 11, 1, 3, 30), utc(2026, 11, 1, 4, 30),
				utc(2026, 11, 2, 3, 30), utc(2026, 11, 2, 4, 30), utc(2026, 11, 2, 5, 30), utc(2026, 11, 3, 4, 30),
			},
			excluded: []time.Time{utc(2026, 11, 1, 4, 30), utc(2026, 11, 2, 3, 30), utc(2026, 11, 2, 4, 30)},
		},
		{
			name: "VALUE=DATE excludes Warsaw's spring-forward day",
			text: "DTSTART;TZID=Europe/Warsaw:20260328T120000\nRRULE:FREQ=DAILY;COUNT=3\nEXDATE;VALUE=DATE:20260329",
			from: utc(2026, 3, 27, 0, 0), to: utc(2026, 4, 1, 0, 0),
			// 12:00 CET is 11:00Z, 12:00 CEST 10:00Z.
			all:      []time.Time{utc(2026, 3, 28, 11, 0), utc(2026, 3, 29, 10, 0), utc(2026, 3, 30, 10, 0)},
			excluded: []time.Time{utc(2026, 3, 29, 10, 0)},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var want []time.Time
			for _, at := range c.all {
				if !slices.ContainsFunc(c.excluded, at.Equal) {
					want = append(want, at)
				}
			}
			for _, at := range c.excluded {
				require.True(t, slices.ContainsFunc(c.all, at.Equal), "the reference excludes %s, not a slot", at)
			}

			var kept []string
			for _, line := range strings.Split(c.text, "\n") {
				if !strings.HasPrefix(line, "EXDATE") {
					kept = append(kept, line)
				}
			}
			without, err := schedule.RRule(strings.Join(kept, "\n"), c.loc)
			require.NoError(t, err)
			require.Equal(t, showUTC(c.all), showUTC(iterate(without, c.from, c.to)), "the slots without EXDATE")

			spec, err := schedule.RRule(c.text, c.loc)
			require.NoError(t, err)
			require.Equal(t, showUTC(want), showUTC(iterate(spec, c.from, c.to)))

			back, err := schedule.Parse(spec.String(), nil)
			require.NoError(t, err, "its text reads back")
			require.Equal(t, showUTC(want), showUTC(iterate(back, c.from, c.to)), "read back from %q", spec.String())
		})
	}
}

func TestExdateValueDateIsForExdateOnly(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"DTSTART;TZID=Europe/Warsaw:20260101T090000\nRDATE;VALUE=DATE:20260301":                        "VALUE=DATE is supported on EXDATE only",
		"DTSTART;TZID=Europe/Warsaw:20260101T090000\nEXDATE;TZID=Europe/Warsaw;VALUE=DATE:20260301":    "TZID does not apply to VALUE=DATE",
		"DTSTART;TZID=Europe/Warsaw:20260101T090000\nEXDATE;VALUE=DATE:20260301T090000":                "20260301T090000 is not a date such as 20260101",
		"DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=DAILY\nEXDATE:20260301":                "a date alone needs VALUE=DATE",
		"DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:FREQ=DAILY\nEXDATE;VALUE=PERIOD:20260301T0": "VALUE=PERIOD is not supported",
	} {
		_, err := schedule.RRule(text, nil)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, text)
		require.ErrorContains(t, err, want, text)
	}
}

// iterate lists a spec's slots in (from, to], each from the one before.
func iterate(s schedule.Spec, from, to time.Time) []time.Time {
	var out []time.Time
	for at := s.Next(from); !at.IsZero() && !at.After(to); at = s.Next(at) {
		out = append(out, at)
	}
	return out
}

func showUTC(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format(time.RFC3339)
	}
	return out
}
