package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// A catch-up whose next slot is due before the item the processor holds
// (jitter, or Finish pulling the item to now) re-adds the schedule: it
// never vanishes from the to-do list.
func TestACatchUpWithJitterKeepsTheScheduleAlive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	every := mustSpec(t)(schedule.Cron("* * * * *", nil))
	_, err := n.s.Sync(ctx, schedule.Definition{Name: "m", Spec: every, CatchUp: tick.All{Window: time.Hour, Max: 100}, Jitter: 5 * time.Minute})
	require.NoError(t, err)
	for range 120 {
		clock.Advance(time.Minute)
		for range 3 {
			n.process(t, clock)
		}
	}
	_, err = n.s.ToDo().Get(ctx, "m")
	require.NoError(t, err, "the schedule still has its next slot")
	require.GreaterOrEqual(t, len(n.rec.slots("m")), 110, "every slot whose jittered time came fired")
}

// Jitter smaller than the spacing of the slots delays them; it does not
// make the catch-up planner take them for missed.
func TestJitterIsNotMistakenForMissedSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	for _, policy := range []tick.CatchUp{tick.LatestOnly{}, tick.Skip{}} {
		name := map[bool]string{true: "latest", false: "skip"}[policy == tick.CatchUp(tick.LatestOnly{})]
		_, err := n.s.Sync(ctx, schedule.Definition{Name: name, Spec: mustSpec(t)(schedule.Cron("*/5 * * * *", nil)), CatchUp: policy, Jitter: 4 * time.Minute})
		require.NoError(t, err)
	}
	for range 24 * 60 {
		clock.Advance(time.Minute)
		n.process(t, clock)
	}
	states, err := n.s.List(ctx)
	require.NoError(t, err)
	for _, st := range states {
		require.Zero(t, st.Skipped, st.Name)
		require.GreaterOrEqual(t, len(n.rec.slots(st.Name)), 24*12-1, st.Name)
	}
}

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

func TestATriggeredRunMayStayOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	db, _ := sqldbtest.SQLite(t)
	rec := &recorder{fail: func(schedule.Run) error { return schedule.ErrStillRunning }}
	n := newNode(t, db.DB, clock, rec)
	_, err := n.s.Sync(ctx, schedule.Definition{Name: "long", Spec: mustSpec(t)(schedule.Cron("@daily", nil))})
	require.NoError(t, err)
	run, err := n.s.Trigger(ctx, "long")
	require.NoError(t, err, "a handler that hands the run over may be triggered")
	require.NoError(t, n.s.Finish(ctx, run.RunID))
}

// A changed definition counts from now: a slot of the old one that had
// come but not fired is counted as skipped, not dropped silently.
func TestAChangeCountsTheSlotItDrops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 9, 59, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	def := schedule.Definition{Name: "daily", Spec: mustSpec(t)(schedule.Cron("0 10 * * *", nil)), Payload: []byte(`1`)}
	_, err := n.s.Sync(ctx, def)
	require.NoError(t, err)
	clock.Advance(90 * time.Second) // 10:00:30: the slot has come, no tick yet
	def.Payload = []byte(`2`)
	res, err := n.s.Sync(ctx, def)
	require.NoError(t, err)
	require.Equal(t, []string{"daily"}, res.Changed)
	states, err := n.s.List(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), states[0].Skipped, "the 10:00 slot is counted as skipped")
	require.True(t, states[0].Next.Equal(time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC)), "%s", states[0].Next)
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
