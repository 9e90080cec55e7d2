package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// recorder is a Handler that remembers every run it saw commit.
type recorder struct {
	mu   sync.Mutex
	runs []schedule.Run
	fail func(schedule.Run) error // nil: every run succeeds
}

func (r *recorder) handle(_ context.Context, tx *sqlx.Tx, run schedule.Run) error {
	var err error
	if r.fail != nil {
		err = r.fail(run)
		if err != nil && !errors.Is(err, schedule.ErrStillRunning) {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, run)
	return err // nil, or ErrStillRunning: the run happened and goes on
}

func (r *recorder) slots(name string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, run := range r.runs {
		if run.Schedule == name && !run.Manual {
			out = append(out, run.Slot)
		}
	}
	return out
}

// node is one process: a scheduler, its processor and its handler.
type node struct {
	s   *schedule.Scheduler
	p   *todolist.Processor
	rec *recorder
}

func newNode(t *testing.T, db *sqlx.DB, clock clockwork.Clock, rec *recorder, opts ...schedule.Option) node {
	t.Helper()
	s, err := schedule.Open(context.Background(), db, rec.handle, append([]schedule.Option{schedule.WithClock(clock)}, opts...)...)
	require.NoError(t, err)
	p, err := s.Processor(todolist.WithBackoff(time.Second, time.Minute))
	require.NoError(t, err)
	return node{s, p, rec}
}

// process works what is due at the clock's now, as a tick would.
func (n node) process(t *testing.T, clock clockwork.Clock) todolist.Result {
	t.Helper()
	res, err := n.p.Process(context.Background(), clock.Now())
	require.NoError(t, err)
	return res
}

// mustSpec returns a constructor's spec, failing the test on its error:
// mustSpec(t)(schedule.Cron(…)).
func mustSpec(t *testing.T) func(schedule.Spec, error) schedule.Spec {
	return func(s schedule.Spec, err error) schedule.Spec {
		t.Helper()
		require.NoError(t, err)
		return s
	}
}

// expectedSlots lists a spec's slots in (from, to].
func expectedSlots(s schedule.Spec, from, to time.Time) []time.Time {
	var out []time.Time
	for at := s.Next(from); !at.IsZero() && !at.After(to); at = s.Next(at) {
		out = append(out, at)
	}
	return out
}

func equalInstants(t *testing.T, want, got []time.Time, msg string) {
	t.Helper()
	w, g := make([]string, len(want)), make([]string, len(got))
	for i := range want {
		w[i] = timefmt.Format(want[i].UTC())
	}
	for i := range got {
		g[i] = timefmt.Format(got[i].UTC())
	}
	require.Equal(t, w, g, msg)
}

func TestASimulatedYearFiresEverySlotOnce(t *testing.T) {
	t.Parallel()
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	newYork, _ := time.LoadLocation("America/New_York")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(1, 0, 0)
	holidays := mustSpec(t)(schedule.Dates(warsaw, schedule.Date{Year: 2026, Month: 12, Day: 24}, schedule.Date{Year: 2026, Month: 12, Day: 25}))
	easterMonday := mustSpec(t)(schedule.Easter(schedule.Western, 1, schedule.Clock{}, warsaw))
	weekdays := mustSpec(t)(schedule.Cron("0 9 * * 1-5", warsaw))
	defs := []schedule.Definition{
		{Name: "poll-every-8h", Spec: mustSpec(t)(schedule.Every(8*time.Hour, start.Add(time.Hour)))},
		{Name: "weekly-report", Spec: mustSpec(t)(schedule.Cron("0 12 * * FRI", warsaw))},
		{Name: "second-tuesday", Spec: mustSpec(t)(schedule.Calendar{Every: schedule.Monthly, Start: start.In(warsaw), Weekdays: []time.Weekday{time.Tuesday}, Nth: 2, At: []schedule.Clock{schedule.At(9, 30)}}.Spec())},
		{Name: "quarterly-31st", Spec: mustSpec(t)(schedule.Calendar{Every: schedule.Monthly, Interval: 3, Start: start.In(warsaw), MonthDays: []int{31}}.Spec())},
		{Name: "last-friday", Spec: mustSpec(t)(schedule.Calendar{Every: schedule.Monthly, Start: start.In(warsaw), Weekdays: []time.Weekday{time.Friday}, Nth: -1, At: []schedule.Clock{schedule.At(17, 0)}}.Spec())},
		{Name: "workdays", Spec: schedule.Except(weekdays, warsaw, holidays, easterMonday)},
		{Name: "easter-monday", Spec: mustSpec(t)(schedule.Easter(schedule.Western, 1, schedule.At(10, 0), warsaw))},
		{Name: "daily-ny", Spec: mustSpec(t)(schedule.Cron("@daily", newYork))},
		{Name: "night-02-30", Spec: mustSpec(t)(schedule.Cron("30 2 * * *", warsaw))},
		{Name: "rrule-dst", Spec: mustSpec(t)(schedule.RRule("DTSTART;TZID=Europe/Warsaw:20260101T023000\nRRULE:FREQ=DAILY", nil))},
		{Name: "ten-runs", Spec: mustSpec(t)(schedule.Cron("0 6 * * *", warsaw)), MaxRuns: 10},
		{Name: "until-june", Spec: mustSpec(t)(schedule.Cron("0 18 * * SUN", warsaw)), Until: time.Date(2026, 6, 30, 0, 0, 0, 0, warsaw)},
	}
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(start)
			n := newNode(t, db.DB, clock, &recorder{})
			res, err := n.s.Sync(context.Background(), defs...)
			require.NoError(t, err)
			require.Len(t, res.Added, len(defs))
			// Advance the clock from due slot to due slot, as the ticks
			// that pass them would, and work the list at each.
			fires := 0
			for {
				due, err := n.s.ToDo().Due(context.Background(), end, 1)
				require.NoError(t, err)
				if len(due) == 0 || due[0].NextAttempt.After(end) {
					break
				}
				clock.Advance(due[0].NextAttempt.Sub(clock.Now()))
				fires += n.process(t, clock).Claimed
			}
			for _, d := range defs {
				want := expectedSlots(d.Spec, start, end)
				if d.MaxRuns > 0 {
					want = want[:d.MaxRuns]
				}
				if !d.Until.IsZero() {
					want = expectedSlots(d.Spec, start, d.Until)
				}
				equalInstants(t, want, n.rec.slots(d.Name), d.Name)
			}
			for _, run := range n.rec.runs {
				require.True(t, run.FiredAt.Equal(run.Slot), "%s fired at %s, its slot", run.SlotID, run.FiredAt)
			}
			t.Logf("%d runs of %d schedules over a year, %d claims", len(n.rec.runs), len(defs), fires)
		})
	}
}

func TestARestartAtEveryMinuteNeitherRepeatsNorDelaysASlot(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
	defs := []schedule.Definition{
		{Name: "every-7m", Spec: mustSpec(t)(schedule.Every(7*time.Minute, start))},
		{Name: "quarter-hours", Spec: mustSpec(t)(schedule.Cron("*/15 * * * *", nil))},
	}
	minutes := 24 * 60
	if testing.Short() {
		minutes = 120
	}
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(start)
	rec := &recorder{}
	for range minutes {
		clock.Advance(time.Minute)
		// A new process: open, declare the same schedules, work one tick.
		n := newNode(t, db.DB, clock, rec)
		res, err := n.s.Sync(context.Background(), defs...)
		require.NoError(t, err)
		require.Empty(t, res.Changed)
		n.process(t, clock)
	}
	end := start.Add(time.Duration(minutes) * time.Minute)
	for _, d := range defs {
		// The first process declared the schedules at start+1m: their
		// slots are those after it.
		equalInstants(t, expectedSlots(d.Spec, start.Add(time.Minute), end), rec.slots(d.Name), d.Name)
	}
	for _, run := range rec.runs {
		require.True(t, run.FiredAt.Equal(run.Slot), "%s fired at %s", run.SlotID, run.FiredAt)
	}
}

func TestReprogrammingTakesEffectAtOnce(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			n := newNode(t, db.DB, clock, &recorder{})
			every8h := schedule.Definition{Name: "poll", Spec: mustSpec(t)(schedule.Every(8*time.Hour, start)), Command: "poll-legacy"}
			_, err := n.s.Sync(context.Background(), every8h)
			require.NoError(t, err)

			clock.Advance(90 * time.Minute)
			res, err := n.s.Sync(context.Background(), every8h)
			require.NoError(t, err)
			require.Equal(t, []string{"poll"}, res.Unchanged)
			item, err := n.s.ToDo().Get(context.Background(), "poll")
			require.NoError(t, err)
			require.True(t, item.Due.Equal(start.Add(8*time.Hour)), "an unchanged spec keeps its slot: %s", item.Due)

			hourly := every8h
			hourly.Spec = mustSpec(t)(schedule.Every(time.Hour, start))
			res, err = n.s.Sync(context.Background(), hourly)
			require.NoError(t, err)
			require.Equal(t, []string{"poll"}, res.Changed)
			item, err = n.s.ToDo().Get(context.Background(), "poll")
			require.NoError(t, err)
			require.True(t, item.Due.Equal(start.Add(2*time.Hour)), "the new spec counts from now: %s", item.Due)

			clock.Advance(30 * time.Minute)
			n.process(t, clock)
			equalInstants(t, []time.Time{start.Add(2 * time.Hour)}, n.rec.slots("poll"), "fired at the first hourly slot")
		})
	}
}

func TestEarlyLateLostAndDoubledWakeUpsLoseNothing(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	_, err := n.s.Sync(context.Background(), schedule.Definition{Name: "hourly", Spec: mustSpec(t)(schedule.Cron("0 * * * *", nil))})
	require.NoError(t, err)
	slot := start.Add(time.Hour)

	// The waking clock runs 3 s ahead: its tick for the slot arrives
	// while the deciding clock still reads 3 s before it.
	clock.Advance(time.Hour - 3*time.Second)
	res, err := n.p.Process(context.Background(), slot)
	require.NoError(t, err)
	require.Zero(t, res.Claimed, "an early wake-up finds nothing due")
	require.Empty(t, n.rec.slots("hourly"))
	// The next wake-up (a minute later) fires it: no limbo.
	clock.Advance(time.Minute)
	n.process(t, clock)
	equalInstants(t, []time.Time{slot}, n.rec.slots("hourly"), "fired at the next wake-up")
	// The same wake-up twice fires nothing more.
	n.process(t, clock)
	require.Len(t, n.rec.slots("hourly"), 1)
	// Wake-ups lost for 40 minutes past the next slot: the first one after fires it.
	clock.Advance(time.Hour + 40*time.Minute)
	n.process(t, clock)
	equalInstants(t, []time.Time{slot, slot.Add(time.Hour)}, n.rec.slots("hourly"), "a late wake-up fires the slot")
}

func TestTwoReplicasFireEachSlotOnce(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.Open(t)
			other, err := sqldb.Open(context.Background(), dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = other.Close() })
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			rec := &recorder{}
			defs := []schedule.Definition{
				{Name: "every-minute", Spec: mustSpec(t)(schedule.Cron("* * * * *", nil))},
				{Name: "every-90s", Spec: mustSpec(t)(schedule.Every(90*time.Second, start))},
				{Name: "every-5m", Spec: mustSpec(t)(schedule.Cron("*/5 * * * *", nil))},
			}
			a, bb := newNode(t, db.DB, clock, rec), newNode(t, other.DB, clock, rec)
			for _, n := range []node{a, bb} {
				_, err := n.s.Sync(context.Background(), defs...)
				require.NoError(t, err)
			}
			for range 60 {
				clock.Advance(time.Minute)
				var wg sync.WaitGroup
				for _, n := range []node{a, bb} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := n.p.Process(context.Background(), clock.Now())
						require.NoError(t, err)
					}()
				}
				wg.Wait()
			}
			for _, d := range defs {
				equalInstants(t, expectedSlots(d.Spec, start, clock.Now()), rec.slots(d.Name), d.Name)
			}
		})
	}
}

// skipReports collects SlotsSkipped events.
type skipReports struct {
	mu  sync.Mutex
	got []schedule.SlotsSkipped
}

func (s *skipReports) Publish(_ context.Context, events ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		s.got = append(s.got, e.(schedule.SlotsSkipped))
	}
	return nil
}

func TestCatchUpAfterDowntime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
	for _, c := range []struct {
		policy  tick.CatchUp
		fired   []time.Time
		skipped int64
	}{
		{nil, []time.Time{start.Add(72 * time.Hour)}, 71},               // latest only
		{tick.LatestOnly{}, []time.Time{start.Add(72 * time.Hour)}, 71}, //
		{tick.Skip{}, nil, 72}, // 10 minutes late is not live
		{tick.All{Window: 24 * time.Hour, Max: 3}, []time.Time{start.Add(70 * time.Hour), start.Add(71 * time.Hour), start.Add(72 * time.Hour)}, 69},
		{tick.All{Window: 150 * time.Minute, Max: 100}, []time.Time{start.Add(70 * time.Hour), start.Add(71 * time.Hour), start.Add(72 * time.Hour)}, 69},
	} {
		db, _ := sqldbtest.SQLite(t)
		clock := clockwork.NewFakeClockAt(start)
		reports := &skipReports{}
		n := newNode(t, db.DB, clock, &recorder{}, schedule.WithPublisher(reports))
		_, err := n.s.Sync(context.Background(), schedule.Definition{Name: "hourly", Spec: hourly, CatchUp: c.policy})
		require.NoError(t, err)
		// Down for three days; back ten minutes after the 72nd slot.
		clock.Advance(72*time.Hour + 10*time.Minute)
		for range 10 { // as many ticks as the catch-up needs
			n.process(t, clock)
		}
		name := "latest-only"
		if c.policy != nil {
			name = fmt.Sprintf("%T", c.policy)
		}
		equalInstants(t, c.fired, n.rec.slots("hourly"), name)
		states, err := n.s.List(context.Background())
		require.NoError(t, err)
		require.Equal(t, c.skipped, states[0].Skipped, name)
		total := int64(0)
		for _, r := range reports.got {
			total += r.Count
			require.Equal(t, "hourly", r.Schedule)
		}
		require.Equal(t, c.skipped, total, "%s: every skipped slot is reported", name)
		require.True(t, states[0].Next.Equal(start.Add(73*time.Hour)), "%s: next %s", name, states[0].Next)
	}
}

func TestPauseResumeTriggerDeleteAndEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
	_, err := n.s.Sync(ctx,
		schedule.Definition{Name: "a", Spec: hourly, Command: "report", Payload: []byte(`{"to":"ops"}`)},
		schedule.Definition{Name: "twice", Spec: hourly, MaxRuns: 2, CatchUp: tick.All{Window: 24 * time.Hour, Max: 100}})
	require.NoError(t, err)

	require.NoError(t, n.s.Pause(ctx, "a"))
	clock.Advance(2 * time.Hour)
	n.process(t, clock)
	require.Empty(t, n.rec.slots("a"), "a paused schedule does not fire")
	require.NoError(t, n.s.Resume(ctx, "a"))
	states, err := n.s.List(ctx)
	require.NoError(t, err)
	require.True(t, states[0].Next.Equal(start.Add(3*time.Hour)), "resumed from now: %s", states[0].Next)
	require.Zero(t, states[0].Skipped, "slots passed while paused are not skips")

	run, err := n.s.Trigger(ctx, "a")
	require.NoError(t, err)
	require.True(t, run.Manual)
	require.Equal(t, "report", run.Command)
	require.JSONEq(t, `{"to":"ops"}`, string(run.Payload))
	require.Contains(t, run.SlotID, "a@manual/"+run.RunID)
	run2, err := n.s.Trigger(ctx, "a")
	require.NoError(t, err)
	require.NotEqual(t, run.RunID, run2.RunID, "each run has its own id")

	clock.Advance(5 * time.Hour)
	for range 6 {
		n.process(t, clock)
	}
	equalInstants(t, []time.Time{start.Add(time.Hour), start.Add(2 * time.Hour)}, n.rec.slots("twice"), "MaxRuns ends it")
	require.NoError(t, n.s.Delete(ctx, "a"))
	_, err = n.s.ToDo().Get(ctx, "a")
	require.ErrorIs(t, err, todolist.ErrNotFound)
	require.ErrorIs(t, n.s.Pause(ctx, "a"), schedule.ErrUnknownSchedule)
	_, err = n.s.Trigger(ctx, "nope")
	require.ErrorContains(t, err, `schedule: trigger "nope": schedule: unknown schedule`)
}

func TestAFailedRunIsRetriedUnderTheSameSlotID(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	attempts := map[string][]int{}
	var runIDs []string
	rec := &recorder{fail: func(r schedule.Run) error {
		attempts[r.SlotID] = append(attempts[r.SlotID], r.Attempt)
		runIDs = append(runIDs, r.RunID)
		switch len(attempts[r.SlotID]) {
		case 1:
			return errors.New("the mail server is down") // as a kill -9 would, this rolls the run back
		case 2:
			panic("a bug in the handler")
		}
		return nil
	}}
	n := newNode(t, db.DB, clock, rec)
	_, err := n.s.Sync(context.Background(), schedule.Definition{Name: "daily", Spec: mustSpec(t)(schedule.Cron("@daily", nil))})
	require.NoError(t, err)
	clock.Advance(24 * time.Hour)
	for range 3 {
		res := n.process(t, clock)
		clock.Advance(2 * time.Second) // past the backoff
		_ = res
	}
	slot := start.Add(24 * time.Hour)
	require.Equal(t, map[string][]int{schedule.SlotID("daily", slot): {1, 2, 3}}, attempts)
	require.Len(t, runIDs, 3)
	require.NotEqual(t, runIDs[0], runIDs[2], "every attempt is its own run")
	equalInstants(t, []time.Time{slot}, rec.slots("daily"), "recorded once")
}

func TestSyncRejectsBadDefinitions(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clockwork.NewFakeClock(), &recorder{})
	hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
	for _, c := range []struct {
		defs []schedule.Definition
		want string
	}{
		{[]schedule.Definition{{Spec: hourly}}, "a schedule needs a name"},
		{[]schedule.Definition{{Name: ".", Spec: hourly}}, `schedule name: ".": "." and ".." cannot be carried in a URL path`},
		{[]schedule.Definition{{Name: "..", Spec: hourly}}, `schedule name: "..": "." and ".."`},
		{[]schedule.Definition{{Name: "nul\x00", Spec: hourly}}, `schedule name: "nul\x00" contains control character U+0000`},
		{[]schedule.Definition{{Name: "\xffbad", Spec: hourly}}, `schedule name: "\xffbad" is not valid UTF-8`},
		{[]schedule.Definition{{Name: "x"}}, `schedule "x" has no spec`},
		{[]schedule.Definition{{Name: "x", Spec: hourly}, {Name: "x", Spec: hourly}}, `"x" is declared twice`},
		{[]schedule.Definition{{Name: "x", Spec: hourly, MaxRuns: -1}}, "MaxRuns -1 is negative"},
		{[]schedule.Definition{{Name: "x", Spec: hourly, CatchUp: tick.All{}}}, "catch-up All needs a positive Window"},
		{[]schedule.Definition{{Name: "x", Spec: hourly, Until: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}}, "Until: sqldb: instant out of the storable range: 2300-01-01T00:00:00Z"},
		{[]schedule.Definition{{Name: "x", Spec: hourly, Until: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}}, "Until: sqldb: instant out of the storable range: 1600"},
	} {
		_, err := n.s.Sync(context.Background(), c.defs...)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, c.want)
		require.ErrorContains(t, err, c.want)
	}
}

func TestJitterDelaysEachSlotByTheSameOffsetEverywhere(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
	var defs []schedule.Definition
	for _, name := range []string{"a", "b", "c", "d"} {
		defs = append(defs, schedule.Definition{Name: name, Spec: hourly, Jitter: 10 * time.Minute})
	}
	_, err := n.s.Sync(context.Background(), defs...)
	require.NoError(t, err)
	offsets := map[string]time.Duration{}
	for range 3*60 + 11 { // three slots, the last one's jitter and a tick
		clock.Advance(time.Minute)
		n.process(t, clock)
	}
	for _, run := range n.rec.runs {
		late := run.FiredAt.Sub(run.Slot)
		require.GreaterOrEqual(t, late, time.Duration(0), run.SlotID)
		require.Less(t, late, 10*time.Minute+time.Minute, "%s: within the jitter, plus the minute the tick takes to come", run.SlotID)
		require.Zero(t, run.Slot.Minute(), "Run.Slot is the planned instant")
		offsets[run.SlotID] = late.Truncate(time.Minute)
	}
	require.Len(t, n.rec.runs, 4*3, "every slot of every schedule, once")
	distinct := map[time.Duration]bool{}
	for _, o := range offsets {
		distinct[o] = true
	}
	require.Greater(t, len(distinct), 1, "the offsets spread the schedules: %v", offsets)

	// Another process computes the same offsets: the item of the next slot
	// is due at the same instant after a restart.
	item, err := n.s.ToDo().Get(context.Background(), "a")
	require.NoError(t, err)
	other := newNode(t, db.DB, clock, &recorder{})
	res, err := other.s.Sync(context.Background(), defs...)
	require.NoError(t, err)
	require.Len(t, res.Unchanged, 4)
	again, err := other.s.ToDo().Get(context.Background(), "a")
	require.NoError(t, err)
	require.True(t, item.Due.Equal(again.Due))

	_, err = n.s.Sync(context.Background(), schedule.Definition{Name: "x", Spec: hourly, Jitter: -time.Second})
	require.ErrorContains(t, err, "Jitter -1s must be between 0 and")
}

func TestBackfillRunsTheSlotsWithoutARunOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
	_, err := n.s.Sync(ctx, schedule.Definition{Name: "hourly", Spec: hourly})
	require.NoError(t, err)
	clock.Advance(3*time.Hour + time.Minute)
	n.process(t, clock) // latest only: fires 03:00, skips 01:00 and 02:00

	runs, err := n.s.Backfill(ctx, "hourly", start.Add(-2*time.Hour), clock.Now())
	require.NoError(t, err)
	var got []time.Time
	for _, r := range runs {
		got = append(got, r.Slot)
		require.Equal(t, schedule.SlotID("hourly", r.Slot), r.SlotID)
	}
	equalInstants(t, []time.Time{start.Add(-time.Hour), start, start.Add(time.Hour), start.Add(2 * time.Hour)}, got, "the slots without a run, not 03:00")
	again, err := n.s.Backfill(ctx, "hourly", start.Add(-2*time.Hour), clock.Now())
	require.NoError(t, err)
	require.Empty(t, again, "backfilling twice runs nothing twice")
	states, err := n.s.List(ctx)
	require.NoError(t, err)
	require.True(t, states[0].Next.Equal(start.Add(4*time.Hour)), "the plan is untouched")

	_, err = n.s.Backfill(ctx, "hourly", start, clock.Now().Add(time.Minute))
	require.ErrorContains(t, err, "is in the future")
	_, err = n.s.Backfill(ctx, "nope", start, clock.Now())
	require.ErrorIs(t, err, schedule.ErrUnknownSchedule)
}

// A process that did not declare a schedule fires it from its stored
// text, in the zone the text names.
func TestAnUndeclaredScheduleFiresFromItsStoredText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, warsaw)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	declaring := newNode(t, db.DB, clock, &recorder{})
	defs := []schedule.Definition{
		{Name: "cron", Spec: mustSpec(t)(schedule.Cron("0 9 * * *", warsaw))},
		{Name: "rule", Spec: mustSpec(t)(schedule.RRule("DTSTART:20260501T100000\nRRULE:FREQ=DAILY", warsaw))},
		{Name: "calendar", Spec: mustSpec(t)(schedule.Calendar{Every: schedule.Daily, Start: start, At: []schedule.Clock{schedule.At(11, 0)}}.Spec())},
		{Name: "every", Spec: mustSpec(t)(schedule.Every(6*time.Hour, start)), Jitter: time.Minute},
	}
	_, err := declaring.s.Sync(ctx, defs...)
	require.NoError(t, err)
	firing := newNode(t, db.DB, clock, &recorder{}) // declares nothing
	for range 12*60 - 30 {                          // ends 11:30: the 12:00 slot of every 6h stays unfired, jitter or not
		clock.Advance(time.Minute)
		firing.process(t, clock)
	}
	for _, d := range defs {
		want := expectedSlots(d.Spec, start, clock.Now())
		require.NotEmpty(t, want, d.Name)
		equalInstants(t, want, firing.rec.slots(d.Name), d.Name)
	}
	require.Empty(t, declaring.rec.runs)
}

func TestOverlapPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
	for _, c := range []struct {
		overlap schedule.Overlap
		// slots fired while the first run (01:00) is open, through 03:30,
		// and right after it is finished at 03:30
		whileOpen, afterFinish []time.Time
		skipped                int64
	}{
		{schedule.AllowOverlap, []time.Time{start.Add(time.Hour), start.Add(2 * time.Hour), start.Add(3 * time.Hour)}, nil, 0},
		{schedule.SkipOverlap, []time.Time{start.Add(time.Hour)}, nil, 2},
		{schedule.BufferOne, []time.Time{start.Add(time.Hour)}, []time.Time{start.Add(3 * time.Hour)}, 1},
	} {
		t.Run(c.overlap.String(), func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start)
			db, _ := sqldbtest.SQLite(t)
			reports := &skipReports{}
			var first string
			rec := &recorder{}
			rec.fail = func(r schedule.Run) error {
				if first == "" {
					first = r.RunID
					return schedule.ErrStillRunning // handed over; goes on
				}
				return nil
			}
			n := newNode(t, db.DB, clock, rec, schedule.WithPublisher(reports))
			_, err := n.s.Sync(ctx, schedule.Definition{Name: "job", Spec: hourly, Overlap: c.overlap})
			require.NoError(t, err)
			for range 3*60 + 30 {
				clock.Advance(time.Minute)
				n.process(t, clock)
			}
			equalInstants(t, c.whileOpen, n.rec.slots("job"), "while the first run is open")

			require.NoError(t, n.s.Finish(ctx, first))
			require.NoError(t, n.s.Finish(ctx, first), "finishing twice changes nothing")
			n.process(t, clock)
			equalInstants(t, append(c.whileOpen, c.afterFinish...), n.rec.slots("job"), "after Finish")

			states, err := n.s.List(ctx)
			require.NoError(t, err)
			require.Equal(t, c.skipped, states[0].Skipped)
			total := int64(0)
			for _, r := range reports.got {
				total += r.Count
			}
			require.Equal(t, c.skipped, total, "skips are reported")
			require.True(t, states[0].Next.Equal(start.Add(4*time.Hour)), "back on the plan: %s", states[0].Next)
		})
	}
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clockwork.NewFakeClock(), &recorder{})
	require.ErrorIs(t, n.s.Finish(ctx, "no-such-run"), schedule.ErrUnknownRun)
	_, err := n.s.Sync(ctx, schedule.Definition{Name: "x", Spec: hourly, Overlap: 7})
	require.ErrorContains(t, err, "Overlap 7 is not AllowOverlap, SkipOverlap or BufferOne")
}

// Slots due together fire in one transaction, each under a savepoint: a
// handler that fails undoes its own slot only.
func TestAFailingRunSparesTheOthersOfItsBatch(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			failed := 0
			rec := &recorder{fail: func(r schedule.Run) error {
				if r.Schedule == "b" && failed == 0 {
					failed++
					return errors.New("mail server down")
				}
				return nil
			}}
			n := newNode(t, db.DB, clock, rec)
			hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
			_, err := n.s.Sync(ctx, schedule.Definition{Name: "a", Spec: hourly}, schedule.Definition{Name: "b", Spec: hourly}, schedule.Definition{Name: "c", Spec: hourly})
			require.NoError(t, err)
			clock.Advance(time.Hour)
			res := n.process(t, clock)
			require.Equal(t, 3, res.Claimed)
			require.Equal(t, 1, res.Failed)
			slot := start.Add(time.Hour)
			// A batch fires set-wise, then slot by slot once a slot fails:
			// "a", before the failure, was called again for the same slot
			// (its first call's transaction rolled back); "c" once.
			equalInstants(t, []time.Time{slot, slot}, n.rec.slots("a"), "a")
			equalInstants(t, []time.Time{slot}, n.rec.slots("c"), "c")
			require.Empty(t, n.rec.slots("b"), "its run rolled back")
			var committed []string
			require.NoError(t, db.SelectContext(ctx, &committed, "SELECT slot_id FROM schedule_runs ORDER BY slot_id"))
			require.Equal(t, []string{schedule.SlotID("a", slot), schedule.SlotID("c", slot)}, committed)
			clock.Advance(2 * time.Second) // past the backoff
			n.process(t, clock)
			equalInstants(t, []time.Time{slot}, n.rec.slots("b"), "retried under the same slot")
		})
	}
}

// A slot that already has a run when its item comes due — Backfill ran it
// first — is not run again: the run record guards it, and the schedule
// moves on to its next slot.
func TestASlotAlreadyRunIsNotRunAgain(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 30, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			n := newNode(t, db.DB, clock, &recorder{})
			hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
			_, err := n.s.Sync(ctx, schedule.Definition{Name: "a", Spec: hourly}, schedule.Definition{Name: "b", Spec: hourly})
			require.NoError(t, err)
			clock.Advance(time.Hour)
			slot := start.Add(30 * time.Minute)
			runs, err := n.s.Backfill(ctx, "a", start, clock.Now())
			require.NoError(t, err)
			require.Len(t, runs, 1)
			res := n.process(t, clock)
			require.Equal(t, 2, res.Claimed)
			equalInstants(t, []time.Time{slot}, n.rec.slots("a"), "a: run by Backfill only")
			equalInstants(t, []time.Time{slot}, n.rec.slots("b"), "b")
			clock.Advance(time.Hour)
			n.process(t, clock)
			equalInstants(t, []time.Time{slot, slot.Add(time.Hour)}, n.rec.slots("a"), "a moved on")
		})
	}
}

// WithSkipsRecordedTx records a skip report in the firing's own
// transaction: a firing that fails stores neither its run nor its report,
// and the one that commits stores both, once.
func TestSkipReportsAreRecordedInTheFiringTransaction(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			db, _ := b.Open(t)
			_, err := db.ExecContext(ctx, `CREATE TABLE skip_reports (schedule TEXT NOT NULL, count BIGINT NOT NULL)`)
			require.NoError(t, err)
			clock := clockwork.NewFakeClockAt(start)
			refuse := true
			n := newNode(t, db.DB, clock, &recorder{}, schedule.WithSkipsRecordedTx(func(ctx context.Context, tx *sqlx.Tx, r schedule.SlotsSkipped) error {
				if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO skip_reports (schedule, count) VALUES (?, ?)`), r.Schedule, r.Count); err != nil {
					return err
				}
				if refuse {
					return errors.New("the outbox is full")
				}
				return nil
			}))
			_, err = n.s.Sync(ctx, schedule.Definition{Name: "hourly", Spec: mustSpec(t)(schedule.Cron("0 * * * *", nil))})
			require.NoError(t, err)
			clock.Advance(72*time.Hour + 10*time.Minute) // down for three days
			res := n.process(t, clock)
			require.Equal(t, 1, res.Failed, "the batch fails with its report")
			count := func() (rows int, total int64) {
				require.NoError(t, db.GetContext(ctx, &rows, `SELECT COUNT(*) FROM skip_reports`))
				if rows > 0 {
					require.NoError(t, db.GetContext(ctx, &total, `SELECT SUM(count) FROM skip_reports`))
				}
				return rows, total
			}
			rows, _ := count()
			require.Zero(t, rows, "nothing of the failed firing is stored")
			states, err := n.s.List(ctx)
			require.NoError(t, err)
			require.Zero(t, states[0].Runs, "its run rolled back with it")
			require.Zero(t, states[0].Skipped)

			refuse = false
			clock.Advance(time.Minute) // past the backoff
			n.process(t, clock)
			rows, total := count()
			require.Equal(t, 1, rows)
			require.Equal(t, int64(71), total, "the 71 slots before the latest, once")
			states, err = n.s.List(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(1), states[0].Runs, "the latest fired with it")
			require.Equal(t, int64(71), states[0].Skipped)
		})
	}
}
