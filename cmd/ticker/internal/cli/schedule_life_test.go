package cli_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

// The whole life of two stored schedules through the command line: added,
// listed, fired by "ticker run" on each slot once with every field of the
// run, one paused and not fired, one triggered by hand, one deleted.
func TestStoredSchedulesFireThroughRun(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start) // 12:00:30 UTC
			sched := scheduleOn(t, clock, db)
			addPollAndReport(t, sched)

			// Schedules fire on minutes: a run without them is refused.
			hourly := run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour")
			require.Equal(t, cli.ExitUsage, hourly.code, hourly.stderr)
			require.Contains(t, hourly.stderr, "--units hour: the database holds 2 schedules")

			runs, manualRunID := runPausingPollAndTriggeringReport(t, clock, db, sched)
			requireEachSlotOnceWithEveryField(t, runs, manualRunID)

			require.Regexp(t, `(?m)^poll\s+-\s+yes\s+3\s+0\s+`, ok(t, sched("list")))
			require.Regexp(t, `(?m)^report\s+2026-11-21T13:12:00\+01:00\s+no\s+3\s+0\s+`, ok(t, sched("list")), "the manual run is not counted")
			deletePoll(t, sched)

			// --once fires what is due too, and nothing twice.
			clock.Advance(3 * time.Minute) // 12:12:30
			once := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute")
			require.Equal(t, map[string]int{"report@2026-11-21T12:12:00Z": 1}, slotIDs(scheduleRuns(t, ok(t, once))))
			require.Contains(t, once.stderr, "; fired 1 schedule run")
			again := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute")
			require.Empty(t, ok(t, again))
		})
	}
}

// addPollAndReport adds the two schedules of TestStoredSchedulesFireThroughRun
// at 12:00:30 — poll every two minutes with a payload, report every three
// minutes from 13:03 in Warsaw — adds poll again unchanged, and checks the
// list.
func addPollAndReport(t *testing.T, sched func(args ...string) result) {
	t.Helper()
	require.Equal(t, "added poll: next slot 2026-11-21T12:02:00Z\n",
		ok(t, sched("add", "--name", "poll", "--spec", "@every 2m", "--command", "poll-inbox", "--payload", `{"box": "orders", "max": 50}`)))
	rule := `DTSTART;TZID=Europe/Warsaw:20261121T130300\nRRULE:FREQ=MINUTELY;INTERVAL=3`
	require.Equal(t, "added report: next slot 2026-11-21T13:03:00+01:00\n",
		ok(t, sched("add", "--name", "report", "--spec", rule, "--tz", "Europe/Warsaw", "--command", "send-report")))
	require.Equal(t, "unchanged poll: next slot 2026-11-21T12:02:00Z\n",
		ok(t, sched("add", "--name", "poll", "--spec", "@every 2m", "--command", "poll-inbox", "--payload", `{"box": "orders", "max": 50}`)),
		"adding the same definition again changes nothing")

	list := ok(t, sched("list")) // each schedule's slots in its own zone
	require.Regexp(t, `(?m)^NAME\s+NEXT SLOT\s+PAUSED\s+RUNS\s+SKIPPED\s+COMMAND\s+SPEC\n`+
		`poll\s+2026-11-21T12:02:00Z\s+no\s+0\s+0\s+poll-inbox\s+@every 2m0s from 1970-01-01T00:00:00Z\n`+
		`report\s+2026-11-21T13:03:00\+01:00\s+no\s+0\s+0\s+send-report\s+DTSTART;TZID=Europe/Warsaw:20261121T130300\\nRRULE:FREQ=MINUTELY;INTERVAL=3\n$`, list)
}

// runPausingPollAndTriggeringReport runs "ticker run" from 12:01 to 12:09,
// pausing poll after 12:06 and triggering report by hand at the end, and
// returns the planned runs it delivered and the triggered run's id. The
// triggered run must be delivered too, as the trigger printed it.
func runPausingPollAndTriggeringReport(t *testing.T, clock *clockwork.FakeClock, db string, sched func(args ...string) result) ([]scheduleRun, string) {
	t.Helper()
	r := startRun(t, clock, "--db", db, "--units", "minute")
	advance := func(minutes int) {
		for range minutes {
			require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
		}
	}
	advance(6) // 12:01 … 12:06
	require.Equal(t, "paused poll\n", ok(t, sched("pause", "poll")))
	advance(3) // 12:07 … 12:09: poll's 12:08 is not fired

	trigger := sched("trigger", "report")
	manual := scheduleRuns(t, ok(t, trigger))
	require.Len(t, manual, 1, trigger.stdout)
	m := manual[0]
	require.True(t, m.Manual)
	require.Equal(t, "report", m.Schedule)
	require.Equal(t, "report@manual/"+m.RunID, m.SlotID)
	require.Equal(t, m.SlotID, m.ID)
	require.True(t, m.Slot.Equal(clock.Now()) && m.FiredAt.Equal(clock.Now()), "a manual run is slotted when it fires")
	require.Contains(t, trigger.stderr, "triggered report: run "+m.RunID)

	require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())
	// The triggered run is in the outbox too: "ticker run" delivers
	// it through its own sinks, under the same slot id.
	var runs []scheduleRun
	for _, run := range scheduleRuns(t, r.stdout.String()) {
		if run.Manual {
			require.Equal(t, m, func() scheduleRun { run.Raw = m.Raw; return run }(), "the triggered run, as the trigger printed it")
			continue
		}
		runs = append(runs, run)
	}
	return runs, m.RunID
}

// requireEachSlotOnceWithEveryField checks the planned runs of
// runPausingPollAndTriggeringReport: each slot once, the paused one not at
// all, and every field of each run, its run id fresh (not manualRunID
// either).
func requireEachSlotOnceWithEveryField(t *testing.T, runs []scheduleRun, manualRunID string) {
	t.Helper()
	require.Equal(t, map[string]int{
		"poll@2026-11-21T12:02:00Z": 1, "poll@2026-11-21T12:04:00Z": 1, "poll@2026-11-21T12:06:00Z": 1,
		"report@2026-11-21T12:03:00Z": 1, "report@2026-11-21T12:06:00Z": 1, "report@2026-11-21T12:09:00Z": 1,
	}, slotIDs(runs), "each slot once; the paused schedule's 12:08 not at all")
	runIDs := map[string]bool{manualRunID: true}
	for _, run := range runs {
		require.Equal(t, "ScheduleRun", run.Type)
		require.Equal(t, run.SlotID, run.ID)
		require.False(t, runIDs[run.RunID], "run ids are fresh")
		runIDs[run.RunID] = true
		require.Equal(t, run.Schedule+"@"+run.Slot.UTC().Format(time.RFC3339), run.SlotID)
		require.Equal(t, run.Slot.Add(30*time.Second), run.FiredAt.Time, "fired when the minute after it was published")
		require.Equal(t, 1, run.Attempt)
		require.False(t, run.Manual)
		switch run.Schedule {
		case "poll":
			require.Equal(t, "poll-inbox", run.Command)
			require.JSONEq(t, `{"box": "orders", "max": 50}`, string(run.Payload))
		case "report":
			require.Equal(t, "send-report", run.Command)
			require.Equal(t, "null", string(run.Payload))
			// The slot reads back as the instant it was printed as.
			require.Contains(t, run.Raw, `"slot":"`+timefmt.Format(run.Slot.Time)+`"`)
		}
	}
	last := slices.IndexFunc(runs, func(r scheduleRun) bool { return r.SlotID == "report@2026-11-21T12:09:00Z" })
	require.GreaterOrEqual(t, last, 0)
	require.Contains(t, runs[last].Raw, `"slot":"2026-11-21T12:09:00Z","fired_at":"2026-11-21T12:09:30Z"`)
}

// deletePoll deletes poll and checks that it is gone: from the list, and
// for every command that names it.
func deletePoll(t *testing.T, sched func(args ...string) result) {
	t.Helper()
	require.Equal(t, "deleted poll\n", ok(t, sched("delete", "poll")))
	var listed []struct {
		Name string     `json:"name"`
		Next *sink.Time `json:"next_slot"`
		Runs int64      `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, sched("list", "--json"))), &listed))
	require.Len(t, listed, 1)
	require.Equal(t, "report", listed[0].Name)
	for _, verb := range []string{"pause", "resume", "trigger", "delete"} {
		gone := sched(verb, "poll")
		require.Equal(t, cli.ExitError, gone.code, verb)
		require.Contains(t, gone.stderr, `no schedule named "poll"`, verb)
	}
	gone := sched("backfill", "poll", "--from", "2026-11-21T12:00:00Z", "--to", "2026-11-21T12:09:00Z")
	require.Equal(t, cli.ExitError, gone.code, gone.stderr)
	require.Contains(t, gone.stderr, `ticker schedule: backfill: no schedule named "poll" in `)
	require.Empty(t, gone.stdout)
}
