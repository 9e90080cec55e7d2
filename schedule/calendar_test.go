package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
)

func TestYearlyCalendarsKeepStartsMonth(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	s, err := schedule.Calendar{Every: schedule.Yearly, Start: start, MonthDays: []int{15}}.Spec()
	require.NoError(t, err)
	require.Equal(t, []string{"2026-05-15T00:00:00Z", "2027-05-15T00:00:00Z"}, slots(t, s, start, 2))
	s, err = schedule.Calendar{Every: schedule.Yearly, Start: start, Weekdays: []time.Weekday{time.Tuesday}, Nth: 2}.Spec()
	require.NoError(t, err)
	require.Equal(t, []string{"2026-05-12T00:00:00Z", "2027-05-11T00:00:00Z"}, slots(t, s, start, 2))
	_, err = schedule.Calendar{Every: schedule.Yearly, Start: start, MonthDays: []int{31}, ShortMonths: schedule.LastDayOfShortMonths}.Spec()
	require.ErrorContains(t, err, "LastDayOfShortMonths needs Every Monthly")
}
