package schedule_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
)

// Backfill runs a schedule's slots only: none after its Until.
func TestBackfillStopsAtUntil(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			n := newNode(t, db.DB, clock, &recorder{})
			hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
			until := start.Add(2*time.Hour + 30*time.Minute)
			_, err := n.s.Sync(ctx, schedule.Definition{Name: "ends", Spec: hourly, Until: until})
			require.NoError(t, err)
			clock.Advance(5 * time.Hour)
			n.process(t, clock) // latest only: fires 02:00, the last slot before Until
			equalInstants(t, []time.Time{start.Add(2 * time.Hour)}, n.rec.slots("ends"), "the plan stops at Until")

			runs, err := n.s.Backfill(ctx, "ends", start.Add(-time.Hour), clock.Now())
			require.NoError(t, err)
			var got []time.Time
			for _, r := range runs {
				got = append(got, r.Slot)
			}
			equalInstants(t, []time.Time{start, start.Add(time.Hour)}, got, "00:00 and 01:00; not 03:00, 04:00 or 05:00, after Until")
		})
	}
}

// Backfill is asked for by name, as Trigger is: it runs a paused
// schedule's missing slots too, and pausing stays as it was.
func TestBackfillRunsAPausedSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	n := newNode(t, db.DB, clock, &recorder{})
	hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
	_, err := n.s.Sync(ctx, schedule.Definition{Name: "paused", Spec: hourly})
	require.NoError(t, err)
	require.NoError(t, n.s.Pause(ctx, "paused"))
	clock.Advance(2*time.Hour + time.Minute)
	n.process(t, clock)
	require.Empty(t, n.rec.slots("paused"), "a paused schedule does not fire")

	runs, err := n.s.Backfill(ctx, "paused", start, clock.Now())
	require.NoError(t, err)
	var got []time.Time
	for _, r := range runs {
		got = append(got, r.Slot)
	}
	equalInstants(t, []time.Time{start.Add(time.Hour), start.Add(2 * time.Hour)}, got, "the slots in (00:00, 02:01]")
	equalInstants(t, got, n.rec.slots("paused"), "the handler ran each")
	states, err := n.s.List(ctx)
	require.NoError(t, err)
	require.True(t, states[0].Paused, "still paused")
	clock.Advance(time.Hour)
	n.process(t, clock)
	require.Len(t, n.rec.slots("paused"), 2, "and still not firing")
}

// Finish respects the jitter as firing does: a slot that has come but
// whose jittered time has not is neither pulled forward nor lost, and a
// slot buffered behind the finished run (its jittered time came while
// the run was open) fires at once.
func TestFinishRespectsJitter(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		for _, overlap := range []schedule.Overlap{schedule.AllowOverlap, schedule.BufferOne} {
			t.Run(b.Name+"/"+overlap.String(), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db, _ := b.Open(t)
				start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
				clock := clockwork.NewFakeClockAt(start)
				var first string
				rec := &recorder{}
				rec.fail = func(r schedule.Run) error {
					if first == "" {
						first = r.RunID
						return schedule.ErrStillRunning
					}
					return nil
				}
				n := newNode(t, db.DB, clock, rec)
				hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
				_, err := n.s.Sync(ctx, schedule.Definition{Name: jitteredName, Spec: hourly, Jitter: 50 * time.Minute, Overlap: overlap})
				require.NoError(t, err)
				slot := start.Add(2 * time.Hour)
				for clock.Now().Before(slot) { // 01:00 fires and stays open
					clock.Advance(time.Minute)
					n.process(t, clock)
				}
				equalInstants(t, []time.Time{start.Add(time.Hour)}, n.rec.slots(jitteredName), "01:00 fired")
				item, err := n.s.ToDo().Get(ctx, jitteredName)
				require.NoError(t, err)
				due := item.Due
				require.True(t, due.After(slot.Add(10*time.Minute)), "the test needs 02:00's jitter to be over 10 minutes; it is %s: pick another name", due.Sub(slot))

				// 02:05: the 02:00 slot has come, its jittered time has not.
				clock.Advance(5 * time.Minute)
				require.NoError(t, n.s.Finish(ctx, first))
				n.process(t, clock)
				equalInstants(t, []time.Time{start.Add(time.Hour)}, n.rec.slots(jitteredName), "02:00 waits for its jitter")
				item, err = n.s.ToDo().Get(ctx, jitteredName)
				require.NoError(t, err)
				require.True(t, item.Due.Equal(due), "02:00 stays due at its jittered time %s, not %s", due, item.Due)
				for clock.Now().Before(due.Add(time.Minute)) {
					clock.Advance(time.Minute)
					n.process(t, clock)
				}
				equalInstants(t, []time.Time{start.Add(time.Hour), slot}, n.rec.slots(jitteredName), "02:00 fired at its jittered time, not lost")
				require.False(t, n.rec.runs[1].FiredAt.Before(due), "not before its jitter")
				states, err := n.s.List(ctx)
				require.NoError(t, err)
				require.Zero(t, states[0].Skipped)
				require.True(t, states[0].Next.Equal(start.Add(3*time.Hour)), "%s", states[0].Next)
				require.Equal(t, 50*time.Minute, states[0].Jitter)
				require.Equal(t, overlap, states[0].Overlap)
			})
		}
	}
}

// A slot buffered behind an open run (BufferOne) had its jittered time
// come; Finish makes it due at once.
func TestFinishFiresAJitteredBufferedSlotAtOnce(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			var first string
			rec := &recorder{}
			rec.fail = func(r schedule.Run) error {
				if first == "" {
					first = r.RunID
					return schedule.ErrStillRunning
				}
				return nil
			}
			n := newNode(t, db.DB, clock, rec)
			hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
			_, err := n.s.Sync(ctx, schedule.Definition{Name: jitteredName, Spec: hourly, Jitter: 50 * time.Minute, Overlap: schedule.BufferOne})
			require.NoError(t, err)
			slot := start.Add(2 * time.Hour)
			for clock.Now().Before(slot) {
				clock.Advance(time.Minute)
				n.process(t, clock)
			}
			item, err := n.s.ToDo().Get(ctx, jitteredName)
			require.NoError(t, err)
			due := item.Due
			for clock.Now().Before(due.Add(5 * time.Minute)) { // 02:00 is buffered
				clock.Advance(time.Minute)
				n.process(t, clock)
			}
			equalInstants(t, []time.Time{start.Add(time.Hour)}, n.rec.slots(jitteredName), "02:00 is buffered")
			require.NoError(t, n.s.Finish(ctx, first))
			n.process(t, clock)
			equalInstants(t, []time.Time{start.Add(time.Hour), slot}, n.rec.slots(jitteredName), "02:00 fires at once")
			require.True(t, n.rec.runs[1].FiredAt.Equal(clock.Now()))
		})
	}
}

// jitteredName is a schedule name whose 02:00 slot on 2026-05-01 has a
// jitter of more than 10 minutes out of 50 (TestFinishRespectsJitter
// checks it).
const jitteredName = "job"

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
