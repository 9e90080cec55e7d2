package schedule_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
)

// RFC 5545 puts a recurrence's properties in any order: an RDATE or
// EXDATE line may come before DTSTART and RRULE.
func TestRecurrenceLinesInAnyOrder(t *testing.T) {
	t.Parallel()
	lines := []string{
		"DTSTART;TZID=Europe/Warsaw:20260501T100000",
		"RRULE:FREQ=DAILY;COUNT=4",
		"RDATE;TZID=Europe/Warsaw;VALUE=DATE-TIME:20260601T100000",
		"EXDATE:20260502T080000Z",
	}
	from := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	want := []string{"2026-05-01T10:00:00+02:00", "2026-05-03T10:00:00+02:00", "2026-05-04T10:00:00+02:00", "2026-06-01T10:00:00+02:00"}
	for _, order := range [][]int{{0, 1, 2, 3}, {2, 0, 1, 3}, {3, 2, 1, 0}, {3, 0, 2, 1}, {1, 3, 0, 2}} {
		var text []string
		for _, i := range order {
			text = append(text, lines[i])
		}
		for _, sep := range []string{"\n", `\n`} {
			s, err := schedule.Parse(strings.Join(text, sep), nil)
			require.NoError(t, err, "%v", order)
			require.Equal(t, want, slots(t, s, from, 4), "%v", order)
			back, err := schedule.Parse(s.String(), nil)
			require.NoError(t, err, "its text reads back")
			require.Equal(t, want, slots(t, back, from, 4), "%v", order)
		}
	}
	// RDATEs alone, the first line.
	s, err := schedule.Parse("RDATE:20260601T100000Z,20260701T100000Z\nDTSTART:20260501T100000Z", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"2026-06-01T10:00:00Z", "2026-07-01T10:00:00Z"}, slots(t, s, from, 2))
	_, err = schedule.Parse("RDATE;VALUE=PERIOD:20260601T100000Z/PT1H\nDTSTART:20260501T100000Z", nil)
	require.ErrorContains(t, err, "VALUE=PERIOD is not supported")
}
