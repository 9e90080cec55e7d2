package schedule

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/teambition/rrule-go"

	"github.com/passage-of-time/passage/internal/zone"
)

// Next expands a rule from a start near the instant asked about, not from
// DTSTART. Check it against the expansion from DTSTART: rrule-go's own
// (StrToRRuleSet) for rules in UTC, where a wall time is its instant, and,
// for rules in a zone, the rule from DTSTART placed occurrence by
// occurrence. Each rule is walked slot by slot through a window years
// after its DTSTART, across a DST change for the zoned ones.
func TestRebasedExpansionMatchesTheExpansionFromDTSTART(t *testing.T) {
	t.Parallel()
	utc := []struct {
		text     string
		from, to time.Time
	}{
		{"DTSTART:20240101T000013Z\nRRULE:FREQ=MINUTELY;INTERVAL=7;BYHOUR=9,17;BYDAY=MO,FR", day(2026, 5, 1), day(2026, 5, 9)},
		{"DTSTART:20250601T000007Z\nRRULE:FREQ=SECONDLY;INTERVAL=13;BYHOUR=12;BYMINUTE=0,1", day(2026, 5, 1), day(2026, 5, 4)},
		{"DTSTART:20180101T050000Z\nRRULE:FREQ=HOURLY;INTERVAL=5;BYMONTHDAY=1,15,-1", day(2026, 1, 1), day(2026, 4, 1)},
		{"DTSTART:20100305T081500Z\nRRULE:FREQ=DAILY;INTERVAL=3;BYHOUR=8,20;BYMINUTE=5", day(2026, 1, 1), day(2026, 3, 1)},
		{"DTSTART:20100107T093000Z\nRRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,SA;WKST=SU", day(2026, 1, 1), day(2026, 6, 1)},
		{"DTSTART:20100107T093000Z\nRRULE:FREQ=WEEKLY;INTERVAL=3;BYDAY=MO,WE,FR;BYSETPOS=-1", day(2026, 1, 1), day(2026, 6, 1)},
		{"DTSTART:20000131T120000Z\nRRULE:FREQ=MONTHLY;INTERVAL=5", day(2025, 1, 1), day(2030, 1, 1)},
		{"DTSTART:20001115T120000Z\nRRULE:FREQ=MONTHLY;INTERVAL=2;BYDAY=-1FR,1MO;BYHOUR=6,18", day(2025, 1, 1), day(2027, 1, 1)},
		{"DTSTART:19960229T120000Z\nRRULE:FREQ=YEARLY", day(2020, 1, 1), day(2060, 1, 1)},
		{"DTSTART:19900101T120000Z\nRRULE:FREQ=YEARLY;INTERVAL=3;BYWEEKNO=20;BYDAY=MO", day(2020, 1, 1), day(2060, 1, 1)},
		{"DTSTART:20200101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=90;UNTIL=20260502T000000Z", day(2026, 4, 28), day(2026, 5, 4)},
	}
	for _, c := range utc {
		spec, err := RRule(c.text, nil)
		require.NoError(t, err, c.text)
		ref, err := rrule.StrToRRuleSet(c.text)
		require.NoError(t, err, c.text)
		want := ref.Between(c.from, c.to, false)
		require.NotEmpty(t, want, c.text)
		require.Equal(t, show(want), show(walk(spec, c.from, c.to)), c.text)
	}

	zoned := []struct {
		text     string
		from, to time.Time
	}{
		{"DTSTART;TZID=Europe/Warsaw:20200101T000000\nRRULE:FREQ=MINUTELY;INTERVAL=25", day(2026, 3, 28), day(2026, 3, 30)},
		{"DTSTART;TZID=Europe/Warsaw:20190101T003000\nRRULE:FREQ=HOURLY;INTERVAL=1\nEXDATE;TZID=Europe/Warsaw:20261025T023000", day(2026, 10, 24), day(2026, 10, 27)},
		{"DTSTART;TZID=America/New_York:20000101T023000\nRRULE:FREQ=DAILY;BYDAY=SU", day(2026, 3, 1), day(2026, 3, 20)},
		{"DTSTART;TZID=Europe/Warsaw:20220101T000000\nRRULE:FREQ=MINUTELY;INTERVAL=15;UNTIL=20261025T011500Z", day(2026, 10, 24), day(2026, 10, 27)},
	}
	for _, c := range zoned {
		s, err := RRule(c.text, nil)
		require.NoError(t, err, c.text)
		spec := s.(rruleSpec)
		var want []time.Time
		for _, e := range spec.rules {
			// From DTSTART, as rrule-go expands it, each occurrence placed.
			for _, w := range e.full.Between(time.Unix(c.from.Unix()-zone.MaxOffset, 0).UTC(), time.Unix(c.to.Unix()+zone.MaxOffset, 0).UTC(), true) {
				at := resolveRFC5545(w.Unix(), spec.loc)
				if !e.exdates[w.Unix()] && at.After(c.from) && !at.After(c.to) && (e.until.IsZero() || !at.After(e.until)) {
					want = append(want, at)
				}
			}
		}
		slices.SortFunc(want, time.Time.Compare)
		want = slices.CompactFunc(want, time.Time.Equal)
		require.NotEmpty(t, want, c.text)
		require.Equal(t, show(want), show(walk(spec, c.from, c.to)), c.text)
	}
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// walk lists a spec's slots in (from, to].
func walk(s Spec, from, to time.Time) []time.Time {
	var out []time.Time
	for at := s.Next(from); !at.IsZero() && !at.After(to); at = s.Next(at) {
		out = append(out, at)
	}
	return out
}

func show(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format(time.RFC3339)
	}
	return out
}
