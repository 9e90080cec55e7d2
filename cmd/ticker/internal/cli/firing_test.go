package cli_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// A timer running "run --once" at 12:01:40 fires a slot of 12:01:10 then,
// not a minute later at the next boundary.
func TestOnceFiresWhatIsDueByNow(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start) // 12:00:30
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, "added ping: next slot 2026-11-21T12:01:10Z\n",
		ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "ping", "--spec", "@every 1m from 2026-11-21T12:00:10Z", "--command", "ping")))
	require.Empty(t, ok(t, run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute")))
	clock.Advance(70 * time.Second) // 12:01:40
	once := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute")
	require.Equal(t, map[string]int{"ping@2026-11-21T12:01:10Z": 1}, slotIDs(pickRuns(t, ok(t, once), false)))
}

// A schedule with catch-up all that missed slots fires every one of them,
// oldest first, in the first pass back — not one a minute, which left an
// every-minute schedule behind for good.
func TestCatchUpAllFiresEveryMissedSlotInOnePass(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start)
			ok(t, run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute"))
			ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "* * * * *", "--command", "poll", "--catch-up", "all"))
			clock.Advance(5 * time.Minute) // 12:01 … 12:05 missed
			// One minute boundary passes (the ticker catches up latest
			// only), so one pass must fire all five.
			r := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute", "--catch-up", "minute=latest")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			var slots []string
			for _, run := range scheduleRuns(t, r.stdout) {
				slots = append(slots, run.SlotID)
			}
			require.Equal(t, []string{
				"poll@2026-11-21T12:01:00Z", "poll@2026-11-21T12:02:00Z", "poll@2026-11-21T12:03:00Z",
				"poll@2026-11-21T12:04:00Z", "poll@2026-11-21T12:05:00Z",
			}, slots, "every missed slot, oldest first, in this pass")
		})
	}
}

// "ticker run" fires a jittered schedule at the first minute after its
// slot's offset, with the planned slot and slot id, the same offset for
// the same slot in another database; without the jitter every slot would
// fire at its own minute.
func TestRunFiresAJitteredScheduleLate(t *testing.T) {
	t.Parallel()
	fire := func(db string, extra ...string) []scheduleRun {
		clock := clockwork.NewFakeClockAt(start) // 12:00:30
		ok(t, run(t, clock, nil, append([]string{"schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 10m", "--command", "poll"}, extra...)...))
		r := startRun(t, clock, "--db", db, "--units", "minute")
		for range 59 { // 12:01 … 12:59
			require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
		}
		require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())
		return scheduleRuns(t, r.stdout.String())
	}
	dir := t.TempDir()
	jittered := fire(filepath.Join(dir, "a.db"), "--jitter", "9m")
	require.Len(t, jittered, 5, "12:10 … 12:50, each fired by 12:59")
	late := 0
	for _, r := range jittered {
		require.Equal(t, 0, r.Slot.Minute()%10, "Run.Slot stays the planned instant: %s", r.Raw)
		require.Equal(t, "poll@"+r.Slot.UTC().Format(time.RFC3339), r.SlotID)
		require.False(t, r.FiredAt.Before(r.Slot.Time), r.Raw)
		require.True(t, r.FiredAt.Before(r.Slot.Add(10*time.Minute)), "fired within the jitter and the minute after it: %s", r.Raw)
		if r.FiredAt.Sub(r.Slot.Time) > time.Minute {
			late++
		}
	}
	require.Positive(t, late, "some slot fired minutes after its instant: %+v", jittered)

	again := fire(filepath.Join(dir, "b.db"), "--jitter", "9m")
	for i := range 5 {
		require.Equal(t, jittered[i].SlotID, again[i].SlotID)
		require.Equal(t, jittered[i].FiredAt.Time, again[i].FiredAt.Time, "the same slot gets the same offset")
	}
	for _, r := range fire(filepath.Join(dir, "c.db")) {
		require.Equal(t, r.Slot.Add(30*time.Second), r.FiredAt.Time, "without a jitter, a slot fires at its minute")
	}
}

// The schedule handler of "ticker run" records a run in the firing's own
// transaction: a firing rolled back leaves nothing to deliver, one that
// commits leaves its run.
func TestARunIsRecordedForDeliveryOnlyWithItsFiring(t *testing.T) {
	t.Parallel()
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := sqldb.Open(ctx, dsn)
			require.NoError(t, err)
			defer db.Close()
			slot := time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC)
			run := schedule.Run{RunID: "r-1", SlotID: schedule.SlotID("poll", slot), Schedule: "poll", Slot: slot, FiredAt: slot, Attempt: 1}
			record, err := cli.RunRecorder(ctx, db)
			require.NoError(t, err)
			for _, commit := range []bool{false, true} {
				tx, err := db.BeginTxx(ctx, nil)
				require.NoError(t, err)
				require.NoError(t, record(ctx, tx, run))
				if commit {
					require.NoError(t, tx.Commit())
				} else {
					require.NoError(t, tx.Rollback())
				}
				n, err := cli.PendingDeliveries(ctx, db)
				require.NoError(t, err)
				if commit {
					require.Equal(t, 1, n, "the committed run waits for delivery")
				} else {
					require.Zero(t, n, "a rolled-back firing leaves nothing to deliver")
				}
			}
		})
	}
}

// /metrics counts the schedule runs the process fired and committed, and
// their lateness from slot to firing.
func TestMetricsCountScheduleRunsAndTheirLateness(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "* * * * *", "--command", "poll"))
	r := startRun(t, clock, "--db", db, "--units", "minute", "--http", "127.0.0.1:0")
	defer func() { require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String()) }()
	for range 2 { // 12:01 and 12:02, each fired 30 s after its slot (the minute passes at :30 here)
		require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
	}
	r.waitRecords(t, 4) // two minutes, two runs
	resp, err := http.Get(serverURL(t, r) + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, want := range []string{
		"passage_schedule_runs_fired_total 2\n",
		"passage_schedule_run_lateness_seconds_sum 60\n",
		"passage_schedule_run_lateness_seconds_count 2\n",
		"passage_schedule_run_lateness_max_seconds 30\n",
	} {
		require.Contains(t, string(body), want)
	}
}
