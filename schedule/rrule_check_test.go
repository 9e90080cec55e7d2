package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
)

// A rule that can never produce an occurrence is rejected, naming the
// rule and, where it can be told, the parts that never meet.
func TestImpossibleRulesAreRejected(t *testing.T) {
	t.Parallel()
	for rule, want := range map[string]string{
		"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30":     "BYMONTHDAY=30 falls in none of the months BYMONTH=2",
		"FREQ=MONTHLY;BYMONTH=4;BYMONTHDAY=31":    "BYMONTHDAY=31 falls in none of the months BYMONTH=4",
		"FREQ=MINUTELY;BYMONTH=4,6;BYMONTHDAY=31": "BYMONTHDAY=31 falls in none of the months BYMONTH=4,6",
		"FREQ=DAILY;BYMONTH=2;BYMONTHDAY=-30":     "BYMONTHDAY=-30 falls in none of the months BYMONTH=2",
		"FREQ=YEARLY;BYWEEKNO=1;BYMONTH=6":        "the rule has no occurrence before 24260101T090000 (400 years after DTSTART)",
		"FREQ=SECONDLY;BYWEEKNO=1;BYMONTH=6":      "no day passes its BYxxx parts",
		"FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6":        "the rule has no occurrence before",
		"FREQ=HOURLY;INTERVAL=2;BYHOUR=8,10":      "FREQ=HOURLY;INTERVAL=2 from DTSTART 20260101T090000 never reaches BYHOUR=8,10",
		"FREQ=MINUTELY;INTERVAL=720;BYHOUR=12":    "never reaches BYHOUR=12",
		"FREQ=SECONDLY;INTERVAL=30;BYSECOND=15":   "never reaches BYSECOND=15",
		"FREQ=DAILY;UNTIL=20251231T000000Z":       "the rule has no occurrence from DTSTART 20260101T090000 to UNTIL 20251231T000000Z",
	} {
		text := "DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:" + rule
		done := make(chan error, 1)
		go func() { _, err := schedule.Parse(text, nil); done <- err }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, schedule.ErrInvalidSpec, rule)
			require.ErrorContains(t, err, `recurrence line "RRULE:`+rule+`"`, rule)
			require.ErrorContains(t, err, want, rule)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: Parse does not return", rule)
		}
	}
	_, err := schedule.Calendar{Every: schedule.Yearly, Start: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC), Months: []time.Month{time.February}, MonthDays: []int{30}}.Spec()
	require.ErrorContains(t, err, "BYMONTHDAY=30 falls in none of the months BYMONTH=2")

	// Rare is not impossible.
	for _, rule := range []string{"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "FREQ=YEARLY;BYWEEKNO=53;BYDAY=TH", "FREQ=HOURLY;INTERVAL=2;BYHOUR=9,13", "FREQ=MINUTELY;INTERVAL=7;BYHOUR=3;BYMINUTE=1"} {
		s, err := schedule.Parse("DTSTART;TZID=Europe/Warsaw:20260101T090000\nRRULE:"+rule, nil)
		require.NoError(t, err, rule)
		require.False(t, s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero(), rule)
	}
}
