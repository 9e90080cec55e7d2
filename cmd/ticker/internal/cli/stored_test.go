package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// databases returns the DSNs a test runs on: a SQLite file, and a fresh
// PostgreSQL schema when PASSAGE_TEST_POSTGRES is set.
func databases(t *testing.T) map[string]string {
	t.Helper()
	dbs := map[string]string{"sqlite": filepath.Join(t.TempDir(), "passage.db")}
	dsn := os.Getenv("PASSAGE_TEST_POSTGRES")
	if dsn == "" {
		return dbs
	}
	ctx := context.Background()
	admin, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	schema := fmt.Sprintf("sched_%d", time.Now().UnixNano())
	_, err = admin.ExecContext(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
		_ = admin.Close()
	})
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	dbs["postgres"] = u.String()
	return dbs
}

// scheduleRun is a ScheduleRun line as a receiver reads it.
type scheduleRun struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	RunID    string          `json:"run_id"`
	SlotID   string          `json:"slot_id"`
	Schedule string          `json:"schedule"`
	Slot     sink.Time       `json:"slot"`
	FiredAt  sink.Time       `json:"fired_at"`
	Attempt  int             `json:"attempt"`
	Manual   bool            `json:"manual"`
	Command  string          `json:"command"`
	Payload  json.RawMessage `json:"payload"`
	Raw      string          `json:"-"`
}

// UnmarshalJSON reads a ScheduleRun's CloudEvent (docs/events.md): type
// and id from the envelope, the run's fields from its data.
func (r *scheduleRun) UnmarshalJSON(b []byte) error {
	type fields scheduleRun
	var ev struct {
		Type string          `json:"type"`
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	}
	var f fields
	if err := json.Unmarshal(b, &ev); err != nil {
		return err
	}
	if err := json.Unmarshal(ev.Data, &f); err != nil {
		return err
	}
	*r = scheduleRun(f)
	r.Type, r.ID = ev.Type, ev.ID
	return nil
}

// scheduleRuns picks the ScheduleRun lines out of JSON lines, checking
// that each follows the minute whose boundary fired it.
func scheduleRuns(t *testing.T, out string) []scheduleRun {
	t.Helper()
	return pickRuns(t, out, true)
}

// pickRuns is scheduleRuns, with the check only when onMinutes: "run
// --once" also fires what is due between the last minute and now.
func pickRuns(t *testing.T, out string, onMinutes bool) []scheduleRun {
	t.Helper()
	var runs []scheduleRun
	for line := range strings.Lines(out) {
		var head struct {
			Type     string     `json:"type"`
			Boundary *sink.Time `json:"boundary"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &head), line)
		switch head.Type {
		case "ScheduleRun":
			var r scheduleRun
			require.NoError(t, json.Unmarshal([]byte(line), &r), line)
			r.Raw = line
			// Runs and minutes are streams of their own: a run may
			// reach a sink before its minute, never before its slot.
			if onMinutes && !r.Manual {
				require.False(t, r.FiredAt.Before(r.Slot.Time), "%s fired before its slot", r.SlotID)
			}
			runs = append(runs, r)
		}
	}
	return runs
}

func slotIDs(runs []scheduleRun) map[string]int {
	ids := map[string]int{}
	for _, r := range runs {
		ids[r.SlotID]++
	}
	return ids
}

func ok(t *testing.T, r result) string {
	t.Helper()
	require.Equal(t, cli.ExitOK, r.code, "stderr: %s", r.stderr)
	return r.stdout
}

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
			require.Equal(t, "added poll: next slot 2026-11-21T12:02:00Z\n",
				ok(t, sched("add", "--name", "poll", "--spec", "@every 2m", "--command", "poll-inbox", "--payload", `{"box": "orders", "max": 50}`)))
			rule := `DTSTART;TZID=Europe/Warsaw:20261121T130300\nRRULE:FREQ=MINUTELY;INTERVAL=3`
			require.Equal(t, "added report: next slot 2026-11-21T13:03:00+01:00\n",
				ok(t, sched("add", "--name", "report", "--spec", rule, "--tz", "Europe/Warsaw", "--command", "send-report")))
			require.Equal(t, "unchanged poll: next slot 2026-11-21T12:02:00Z\n",
				ok(t, sched("add", "--name", "poll", "--spec", "@every 2m", "--command", "poll-inbox", "--payload", `{"box": "orders", "max": 50}`)),
				"adding the same definition again changes nothing")

			list := ok(t, sched("list"))
			require.Regexp(t, `(?m)^NAME\s+NEXT SLOT\s+PAUSED\s+RUNS\s+SKIPPED\s+COMMAND\s+SPEC\n`+
				`poll\s+2026-11-21T12:02:00Z\s+no\s+0\s+0\s+poll-inbox\s+@every 2m0s from 1970-01-01T00:00:00Z\n`+
				`report\s+2026-11-21T12:03:00Z\s+no\s+0\s+0\s+send-report\s+DTSTART;TZID=Europe/Warsaw:20261121T130300\\nRRULE:FREQ=MINUTELY;INTERVAL=3\n$`, list)

			// Schedules fire on minutes: a run without them is refused.
			hourly := run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour")
			require.Equal(t, cli.ExitUsage, hourly.code, hourly.stderr)
			require.Contains(t, hourly.stderr, "--units hour: the database holds 2 schedules")

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
			require.Equal(t, map[string]int{
				"poll@2026-11-21T12:02:00Z": 1, "poll@2026-11-21T12:04:00Z": 1, "poll@2026-11-21T12:06:00Z": 1,
				"report@2026-11-21T12:03:00Z": 1, "report@2026-11-21T12:06:00Z": 1, "report@2026-11-21T12:09:00Z": 1,
			}, slotIDs(runs), "each slot once; the paused schedule's 12:08 not at all")
			runIDs := map[string]bool{m.RunID: true}
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

			require.Regexp(t, `(?m)^poll\s+-\s+yes\s+3\s+0\s+`, ok(t, sched("list")))
			require.Regexp(t, `(?m)^report\s+2026-11-21T12:12:00Z\s+no\s+3\s+0\s+`, ok(t, sched("list")), "the manual run is not counted")

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

// A receiver that refuses a run does not undo it: the run is committed
// (in schedule_runs) with its firing, and the receiver gets it later,
// from the outbox, under the same Idempotency-Key (the slot id) and with
// the same body (run id, attempt 1); the minutes, another stream, go on
// meanwhile; every run the receiver took is a run the database holds.
func TestARefusedRunIsCommittedAndDeliveredLaterUnderTheSameKey(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got, refusedKeys []scheduleRun
			var minutes []string
			refused := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				defer mu.Unlock()
				if r.Header.Get(sink.HeaderEvent) != "ScheduleRun" {
					minutes = append(minutes, r.Header.Get(sink.HeaderIdempotency))
					return
				}
				var run scheduleRun
				if err := json.Unmarshal(body, &run); err != nil || run.ID != r.Header.Get(sink.HeaderIdempotency) {
					http.Error(w, "bad body", http.StatusBadRequest)
					return
				}
				if refused < 2 {
					refused++
					refusedKeys = append(refusedKeys, run)
					http.Error(w, "not now", http.StatusServiceUnavailable)
					return
				}
				got = append(got, run)
			}))
			t.Cleanup(srv.Close)

			clock := clockwork.NewFakeClockAt(start)
			ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 5m", "--command", "poll"))
			r := startRun(t, clock, "--db", db, "--units", "minute", "--webhook", srv.URL, "--webhook-backoff", "1s")
			// Delivery follows each commit on the relay's goroutine, and a
			// retry waits out its backoff on the fake clock: wait for each
			// minute's record before the next minute, then let minutes pass
			// until the refused run was taken.
			counts := func() (int, int, int) {
				mu.Lock()
				defer mu.Unlock()
				return len(minutes), len(refusedKeys), len(got)
			}
			for i := range 8 { // 12:01 … 12:08; the run of 12:05 refused twice, then taken
				require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
				require.Eventually(t, func() bool { m, _, _ := counts(); return m == i+1 }, 10*time.Second, time.Millisecond, "minute 12:0%d: %s", i+1, r.stderr)
			}
			// A retry is due a second or two after its refusal on the fake
			// clock, which only the minutes move; when the record was read
			// late (PostgreSQL's horizon), its retry may need a minute more.
			passed := 8
			for ; passed < 12; passed++ {
				taken := func() bool { _, refusals, taken := counts(); return refusals == 2 && taken == 1 }
				if within(2*time.Second, taken) {
					break
				}
				require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
			}
			require.Eventually(t, func() bool { _, refusals, taken := counts(); return refusals == 2 && taken == 1 }, 10*time.Second, time.Millisecond,
				"the run of 12:05, refused twice, then taken: %s", r.stderr)
			require.Eventually(t, func() bool { m, _, _ := counts(); return m == passed }, 10*time.Second, time.Millisecond)
			require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, refusedKeys, 2, "refused twice")
			require.Len(t, got, 1, "then taken once, the stop's drain adding nothing: %+v", got)
			require.Equal(t, "poll@2026-11-21T12:05:00Z", got[0].SlotID)
			for _, r := range refusedKeys {
				require.Equal(t, got[0], r, "the same record every time: key, run id, attempt")
			}
			require.Equal(t, 1, got[0].Attempt, "fired once")
			require.Equal(t, 1, strings.Count(r.stderr.String(), "delivery refused; retried with backoff under the same key"), "logged once for the record, not per refusal: %s", r.stderr)
			require.NotContains(t, r.stderr.String(), "schedule run failed", "the firing did not fail")
			require.Len(t, minutes, passed, "each minute once, beside the refusals: %v", minutes)

			var listed []struct{ Runs int64 }
			require.NoError(t, json.Unmarshal([]byte(ok(t, run(t, clock, nil, "schedule", "list", "--db", db, "--json"))), &listed))
			require.Equal(t, int64(1), listed[0].Runs, "the run was committed at its first firing")
			requireRunsInDB(t, db, got[0].RunID)
		})
	}
}

// within polls cond for at most d and reports whether it held: for a
// test that moves the fake clock on when something has not happened yet.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// countRuns counts the runs the database holds.
func countRuns(t *testing.T, dsn string) int {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM schedule_runs`))
	return n
}

// requireRunsInDB checks that the database holds a run of each run id.
func requireRunsInDB(t *testing.T, dsn string, runIDs ...string) {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer db.Close()
	for _, id := range runIDs {
		var n int
		require.NoError(t, db.GetContext(context.Background(), &n, db.Rebind(`SELECT COUNT(*) FROM schedule_runs WHERE run_id = ?`), id))
		require.Equal(t, 1, n, "run %s is in the database", id)
	}
}

func TestScheduleCommandFlagErrors(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "passage.db")
	add := func(args ...string) []string {
		return append([]string{"schedule", "add", "--db", db, "--name", "poll", "--command", "poll"}, args...)
	}
	backfill := func(args ...string) []string {
		return append(append([]string{"schedule", "backfill", "--db", db}, args...), "poll")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "add", "--db", db, "--spec", "@daily", "--command", "x"}, "--name is required"},
		{[]string{"schedule", "add", "--db", db, "--spec", "@daily", "--name", "x"}, "--command is required"},
		{add(), "exactly one of --spec and --spec-file"},
		{add("--spec", "61 * * * *"), `--spec "61 * * * *": schedule: invalid spec: cron "61 * * * *": minute field "61"`},
		{add("--spec", "DTSTART:20260101T000000\nRRULE:FREQ=SOMETIMES"), `line "RRULE:FREQ=SOMETIMES"`},
		{add("--spec", "@every 1ms"), "--spec"},
		{add("--spec", "@daily", "--payload", `{"box": orders}`), `--payload "{\"box\": orders}": not a JSON value`},
		{add("--spec", "@daily", "--catch-up", "sometimes"), `--catch-up "sometimes": not latest, skip or all`},
		{add("--spec", "@daily", "--catch-up-max", "5"), "--catch-up-window and --catch-up-max apply to --catch-up all only"},
		{add("--spec", "@daily", "--catch-up", "all", "--catch-up-window", "1s"), "--catch-up-window 1s"},
		{add("--spec", "@daily", "--max-runs", "-1"), "--max-runs -1"},
		{add("--spec", "@daily", "--until", "someday"), `--until "someday"`},
		{add("--spec", "@daily", "--tz", "Mars/Olympus"), `--tz "Mars/Olympus"`},
		{add("--spec", "@daily", "--jitter", "-1s"), "--jitter -1s: must be between 0s and 876000h0m0s"},
		{add("--spec", "@daily", "--jitter", "5"), `invalid value "5" for flag -jitter`},
		{add("--spec", "@daily", "--jitter", "876001h"), "--jitter 876001h0m0s: must be between 0s and 876000h0m0s"},
		{add("--spec", "@daily", "--overlap", "queue"), `--overlap "queue": not allow, skip or buffer`},
		{add("--spec", "@daily", "--overlap", ""), `--overlap "": not allow, skip or buffer`},
		{backfill("--to", "2026-01-02"), "--from and --to are required"},
		{backfill("--from", "2026-01-01"), "--from and --to are required"},
		{backfill("--from", "yesterday", "--to", "2026-01-02"), `--from "yesterday": not a time`},
		{backfill("--from", "2026-01-01", "--to", "2026-13-01"), `--to "2026-13-01": not a time`},
		{backfill("--from", "2026-01-02", "--to", "2026-01-01"), "--from 2026-01-02T00:00:00Z is not before --to 2026-01-01T00:00:00Z"},
		{backfill("--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00:00+01:00"), "--from 2026-01-01T00:00:00Z is not before --to 2026-01-01T01:00:00+01:00"},
		{backfill("--from", "2026-01-01", "--to", "2999-01-01"), "--to 2999-01-01T00:00:00Z is in the future (now is "},
		{backfill("--from", "2026-03-29T02:30", "--to", "2026-03-30", "--tz", "Europe/Warsaw"), `--from "2026-03-29T02:30": 2026-03-29 02:30 does not exist in Europe/Warsaw`},
		{backfill("--from", "2026-01-01", "--to", "2026-01-02", "--tz", "Mars/Olympus"), `--tz "Mars/Olympus"`},
		{backfill("--from", "2026-01-01", "--to", "2026-01-02", "--webhook", "ftp://example.com/x"), `--webhook "ftp://example.com/x"`},
		{[]string{"schedule", "backfill", "--db", db, "--from", "2026-01-01", "--to", "2026-01-02"}, "give exactly one schedule name (got 0)"},
		{backfill("--from", "2026-01-01", "--to", "2026-01-02", "--from", "2026-01-01"), `given twice ("2026-01-01" and "2026-01-01")`},
		{[]string{"schedule", "pause", "--db", db}, "give exactly one schedule name (got 0)"},
		{[]string{"schedule", "delete", "--db", db, "a", "b"}, "give exactly one schedule name (got 2)"},
		{[]string{"schedule", "resume", "poll", "--nonsense"}, "-nonsense"},
		{[]string{"schedule", "trigger", "--db", db, "--webhook", "ftp://example.com/x", "poll"}, `--webhook "ftp://example.com/x"`},
		{[]string{"schedule", "list", "--db", db, "--tz", "Nowhere"}, `--tz "Nowhere"`},
		{[]string{"schedule", "prune", "--db", db}, "give exactly one of --older-than and --before"},
		{[]string{"schedule", "prune", "--db", db, "--older-than", "720h", "--before", "2026-01-01"}, "give exactly one of --older-than and --before"},
		{[]string{"schedule", "prune", "--db", db, "--older-than", "-1h"}, "--older-than -1h0m0s: must be positive"},
		{[]string{"schedule", "prune", "--db", db, "--older-than", "30"}, `invalid value "30" for flag -older-than`},
		{[]string{"schedule", "prune", "--db", db, "--before", "2999-01-01"}, "--before 2999-01-01T00:00:00Z is in the future (now is "},
		{[]string{"schedule", "prune", "--db", db, "--before", "last week"}, `--before "last week": not a time`},
		{[]string{"schedule", "prune", "--db", db, "--older-than", "1h", "poll"}, `unexpected argument "poll"`},
		{[]string{"run", "--db", db, "--schedules=maybe"}, "-schedules"},
	} {
		r := run(t, nil, nil, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%q: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, "%q", c.args)
		require.Empty(t, r.stdout, "%q", c.args)
	}
	_, err := os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist, "a flag error creates no database")
}

// list, pause, resume, trigger, delete, backfill and prune only read a database that holds
// no schedules: they say so and create nothing.
func TestScheduleCommandsOnADatabaseWithoutSchedulesCreateNothing(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	dir := t.TempDir()
	db := filepath.Join(dir, "passage.db")
	ok(t, run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour", "--schedules=false"))
	tables := sqliteTables(t, db)

	list := run(t, clock, nil, "schedule", "list", "--db", db)
	require.Equal(t, cli.ExitError, list.code)
	require.Contains(t, list.stderr, "no schedules: the database has no schedule tables")
	for _, verb := range []string{"pause", "resume", "trigger", "delete"} {
		r := run(t, clock, nil, "schedule", verb, "--db", db, "poll")
		require.Equal(t, cli.ExitError, r.code, verb)
		require.Contains(t, r.stderr, `no schedule named "poll"`, verb)
	}
	r := run(t, clock, nil, "schedule", "backfill", "--db", db, "--from", "2026-11-21", "--to", "2026-11-21T12:00", "poll")
	require.Equal(t, cli.ExitError, r.code, r.stderr)
	require.Contains(t, r.stderr, `ticker schedule: backfill: no schedule named "poll": --db `)
	r = run(t, clock, nil, "schedule", "prune", "--db", db, "--older-than", "720h")
	require.Equal(t, cli.ExitError, r.code, r.stderr)
	require.Contains(t, r.stderr, "ticker schedule: prune: --db ")
	require.Contains(t, r.stderr, "no schedules: the database has no schedule tables")
	require.Equal(t, tables, sqliteTables(t, db), "no table was created")

	missing := filepath.Join(dir, "typo.db")
	r = run(t, clock, nil, "schedule", "list", "--db", missing)
	require.Equal(t, cli.ExitError, r.code)
	require.Contains(t, r.stderr, "no such database (nothing was created)")
	_, err := os.Stat(missing)
	require.ErrorIs(t, err, os.ErrNotExist)
}

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

// A cron expression in a zone is stored with its zone and fires there.
func TestAZonedCronScheduleIsStoredInItsZone(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "passage.db")
	r := run(t, clockwork.NewFakeClockAt(time.Date(2026, 3, 27, 0, 0, 0, 0, time.UTC)), nil,
		"schedule", "add", "--db", db, "--name", "report", "--command", "send-report", "--spec", "0 12 * * FRI", "--tz", "Europe/Warsaw")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "added report: next slot 2026-03-27T12:00:00+01:00")
	r = run(t, nil, nil, "schedule", "list", "--db", db)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "CRON_TZ=Europe/Warsaw 0 12 * * FRI")
}

// listedPolicies is the part of a "schedule list --json" element that
// --jitter and --overlap set.
type listedPolicies struct {
	Name    string  `json:"name"`
	Runs    int64   `json:"runs"`
	Skipped int64   `json:"skipped"`
	Jitter  *string `json:"jitter"`
	Overlap *string `json:"overlap"`
}

func listPolicies(t *testing.T, db string) map[string]listedPolicies {
	t.Helper()
	var listed []listedPolicies
	require.NoError(t, json.Unmarshal([]byte(ok(t, run(t, nil, nil, "schedule", "list", "--db", db, "--json"))), &listed))
	byName := map[string]listedPolicies{}
	for _, l := range listed {
		byName[l.Name] = l
	}
	return byName
}

// --jitter and --overlap are stored with the schedule: list shows them
// when not the default, in JSON and in two columns of the table, which
// appear only then; adding the schedule again without them takes them
// away.
func TestScheduleAddStoresJitterAndOverlap(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start)
			add := func(name string, args ...string) result {
				return run(t, clock, nil, append([]string{"schedule", "add", "--db", db, "--name", name, "--spec", "@every 10m", "--command", name}, args...)...)
			}
			require.Equal(t, "added plain: next slot 2026-11-21T12:10:00Z\n", ok(t, add("plain")))
			require.Regexp(t, `^NAME\s+NEXT SLOT\s+PAUSED\s+RUNS\s+SKIPPED\s+COMMAND\s+SPEC\n`, ok(t, run(t, nil, nil, "schedule", "list", "--db", db)),
				"no JITTER or OVERLAP column while every schedule has the defaults")

			require.Equal(t, "added spread: next slot 2026-11-21T12:10:00Z\n", ok(t, add("spread", "--jitter", "90s")))
			skip := add("skip", "--overlap", "skip", "--jitter", "2m")
			require.Equal(t, "added skip: next slot 2026-11-21T12:10:00Z\n", ok(t, skip))
			require.Empty(t, skip.stderr)
			require.Equal(t, "added buffer: next slot 2026-11-21T12:10:00Z\n", ok(t, add("buffer", "--overlap", "Buffer")))
			require.Equal(t, "added buffer-one: next slot 2026-11-21T12:10:00Z\n", ok(t, add("buffer-one", "--overlap", "buffer-one")))
			require.Equal(t, "added allow: next slot 2026-11-21T12:10:00Z\n", ok(t, add("allow", "--overlap", "allow", "--jitter", "0s")))

			list := ok(t, run(t, nil, nil, "schedule", "list", "--db", db))
			require.Regexp(t, `^NAME\s+NEXT SLOT\s+PAUSED\s+RUNS\s+SKIPPED\s+JITTER\s+OVERLAP\s+COMMAND\s+SPEC\n`+
				`allow\s+2026-11-21T12:10:00Z\s+no\s+0\s+0\s+-\s+allow\s+allow\s+@every 10m0s from 1970-01-01T00:00:00Z\n`+
				`buffer\s+2026-11-21T12:10:00Z\s+no\s+0\s+0\s+-\s+buffer\s+buffer\s+@every`, list)
			require.Regexp(t, `(?m)^buffer-one\s+\S+\s+no\s+0\s+0\s+-\s+buffer\s+buffer-one\s+@every`, list)
			require.Regexp(t, `(?m)^plain\s+\S+\s+no\s+0\s+0\s+-\s+allow\s+plain\s+@every`, list)
			require.Regexp(t, `(?m)^skip\s+\S+\s+no\s+0\s+0\s+2m0s\s+skip\s+skip\s+@every`, list)
			require.Regexp(t, `(?m)^spread\s+\S+\s+no\s+0\s+0\s+1m30s\s+allow\s+spread\s+@every`, list)

			str := func(s string) *string { return &s }
			listed := listPolicies(t, db)
			for name, want := range map[string][2]*string{
				"plain": {nil, nil}, "allow": {nil, nil}, "spread": {str("1m30s"), nil},
				"skip": {str("2m0s"), str("skip")}, "buffer": {nil, str("buffer")}, "buffer-one": {nil, str("buffer")},
			} {
				require.Equal(t, want[0], listed[name].Jitter, "%s: jitter, left out of the JSON when none", name)
				require.Equal(t, want[1], listed[name].Overlap, "%s: overlap, left out of the JSON when allow", name)
			}

			// They are part of the definition: changing them changes it.
			require.Equal(t, "unchanged skip: next slot 2026-11-21T12:10:00Z\n", ok(t, add("skip", "--overlap", "skip", "--jitter", "2m")))
			require.Equal(t, "changed (its next slot is recomputed from now) skip: next slot 2026-11-21T12:10:00Z\n", ok(t, add("skip", "--overlap", "skip")))
			require.Equal(t, "changed (its next slot is recomputed from now) skip: next slot 2026-11-21T12:10:00Z\n", ok(t, add("skip")))
			for _, name := range []string{"spread", "buffer", "buffer-one"} {
				ok(t, add(name))
			}
			require.Regexp(t, `^NAME\s+NEXT SLOT\s+PAUSED\s+RUNS\s+SKIPPED\s+COMMAND\s+SPEC\n`, ok(t, run(t, nil, nil, "schedule", "list", "--db", db)))
		})
	}
}

// A jitter that is longer than the spacing of the slots is taken, with a
// warning on stderr: a slot can then fire after the next one's time.
func TestScheduleAddWarnsOfAJitterLongerThanTheSlotSpacing(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "passage.db")
	r := run(t, clockwork.NewFakeClockAt(start), nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 2m", "--command", "poll", "--jitter", "150s")
	require.Equal(t, "added poll: next slot 2026-11-21T12:02:00Z\n", ok(t, r))
	require.Equal(t, "warning: --jitter 2m30s is longer than the spacing of the slots (2m0s): a slot can fire after the next one's time, and the catch-up policy then decides between them as between missed slots\n", r.stderr)
	r = run(t, clockwork.NewFakeClockAt(start), nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 2m", "--command", "poll", "--jitter", "2m")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Empty(t, r.stderr, "a jitter as long as the spacing keeps the slots in order")
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

// --overlap reaches the scheduler that fires the schedule: "ticker run"
// closes every run as it publishes it, so this drives a library process
// whose handler leaves each run open (schedule.ErrStillRunning) over the
// database the command line wrote.
func TestScheduleAddOverlapReachesTheScheduler(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start) // 12:00:30
			for _, o := range []string{"allow", "skip", "buffer"} {
				ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", o, "--spec", "@every 1m", "--command", o, "--overlap", o))
			}
			ctx := context.Background()
			sdb, err := sqldb.Open(ctx, db)
			require.NoError(t, err)
			t.Cleanup(func() { _ = sdb.Close() })
			var mu sync.Mutex
			first := map[string]string{} // each schedule's first run, left open
			stillRunning := func(_ context.Context, _ *sqlx.Tx, r schedule.Run) error {
				mu.Lock()
				defer mu.Unlock()
				if first[r.Schedule] == "" {
					first[r.Schedule] = r.RunID
				}
				return schedule.ErrStillRunning
			}
			s, err := schedule.Open(ctx, sdb.DB, stillRunning, schedule.WithClock(clock))
			require.NoError(t, err)
			p, err := s.Processor()
			require.NoError(t, err)
			process := func() {
				_, err := p.Process(ctx, clock.Now())
				require.NoError(t, err)
			}
			for range 3 { // 12:01, 12:02, 12:03: the first run stays open
				clock.Advance(time.Minute)
				process()
			}
			counts := func(name string) [2]int64 {
				l := listPolicies(t, db)[name]
				return [2]int64{l.Runs, l.Skipped}
			}
			require.Equal(t, [2]int64{3, 0}, counts("allow"), "allow fires every slot")
			require.Equal(t, [2]int64{1, 2}, counts("skip"), "skip skips the slots of 12:02 and 12:03")
			require.Equal(t, [2]int64{1, 1}, counts("buffer"), "buffer keeps the latest slot (12:03) until the run finishes, and catch-up latest skips 12:02")

			mu.Lock()
			open := first
			mu.Unlock()
			for _, name := range []string{"skip", "buffer"} {
				require.NoError(t, s.Finish(ctx, open[name]))
			}
			process() // still 12:03:30
			require.Equal(t, [2]int64{1, 2}, counts("skip"), "skip fires nothing once the run finishes")
			require.Equal(t, [2]int64{2, 1}, counts("buffer"), "buffer fires the kept slot once the run finishes")
		})
	}
}

// backfill runs the slots of a past range that have no run yet and
// publishes each as "ticker run" does, with its planned slot and slot id;
// backfilling again runs nothing twice.
func TestScheduleBackfillPublishesEachRun(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start) // 12:00:30
			sched := scheduleOn(t, clock, db)
			ok(t, sched("add", "--name", "poll", "--spec", "@every 10m", "--command", "poll-inbox", "--payload", `{"box": "orders"}`, "--jitter", "5m"))

			b := sched("backfill", "poll", "--from", "2026-11-21T10:55:00Z", "--to", "2026-11-21T11:30:00Z")
			runs := pickRuns(t, ok(t, b), false)
			require.Equal(t, "backfilled 4 runs of poll in (2026-11-21T10:55:00Z, 2026-11-21T11:30:00Z]\n", b.stderr)
			require.Len(t, runs, 4, b.stdout)
			ids := map[string]bool{}
			for i, r := range runs {
				slot := time.Date(2026, 11, 21, 11, 10*i, 0, 0, time.UTC)
				require.Equal(t, "ScheduleRun", r.Type)
				require.Equal(t, "poll@"+slot.Format(time.RFC3339), r.SlotID, "the planned slot id, oldest first")
				require.Equal(t, r.SlotID, r.ID)
				require.True(t, r.Slot.Equal(slot), "the planned slot, without the jitter: %s", r.Raw)
				require.True(t, r.FiredAt.Equal(clock.Now()), r.Raw)
				require.False(t, r.Manual)
				require.Equal(t, 1, r.Attempt)
				require.Equal(t, "poll-inbox", r.Command)
				require.JSONEq(t, `{"box": "orders"}`, string(r.Payload))
				require.False(t, ids[r.RunID], "run ids are fresh")
				ids[r.RunID] = true
			}

			again := sched("backfill", "--from", "2026-11-21T11:00:00Z", "--to", "2026-11-21T11:50:00Z", "poll")
			runs = pickRuns(t, ok(t, again), false)
			require.Equal(t, map[string]int{"poll@2026-11-21T11:40:00Z": 1, "poll@2026-11-21T11:50:00Z": 1}, slotIDs(runs), "the slots run already are left alone")
			require.Equal(t, "backfilled 2 runs of poll in (2026-11-21T11:00:00Z, 2026-11-21T11:50:00Z]\n", again.stderr)

			// Local times are read, and the summary shown, in --tz.
			none := sched("backfill", "poll", "--tz", "Europe/Warsaw", "--from", "2026-11-21T12:00", "--to", "2026-11-21T12:50")
			require.Empty(t, ok(t, none))
			require.Equal(t, "backfilled 0 runs of poll in (2026-11-21T12:00:00+01:00, 2026-11-21T12:50:00+01:00]: no slot in it without a run\n", none.stderr)

			var listed []struct{ Runs int64 }
			require.NoError(t, json.Unmarshal([]byte(ok(t, sched("list", "--json"))), &listed))
			require.Equal(t, int64(0), listed[0].Runs, "backfilled runs are not runs of the plan")
		})
	}
}

// A webhook that refuses a backfilled run no longer undoes it: every run
// is recorded with its slot, and delivered after the commit; the refused
// one, and what its schedule has after it, wait in the outbox, and the
// next command with that webhook (here "ticker run --once") delivers them
// under the same keys. A receiver never sees a run that is not recorded.
func TestScheduleBackfillRecordsEveryRunAndARefusedOneIsDeliveredLater(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	refuse := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get(sink.HeaderIdempotency)
		if refuse && id == "poll@2026-11-21T11:20:00Z" {
			http.Error(w, "not now", http.StatusServiceUnavailable)
			return
		}
		got = append(got, id)
	}))
	t.Cleanup(srv.Close)

	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 10m", "--command", "poll"))
	backfill := []string{"schedule", "backfill", "--db", db, "--from", "2026-11-21T11:00:00Z", "--to", "2026-11-21T11:30:00Z", "--webhook", srv.URL, "poll"}
	r := run(t, clock, nil, backfill...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Empty(t, r.stdout, "the runs go to the webhook only")
	require.Contains(t, r.stderr, "backfilled 3 runs of poll in (2026-11-21T11:00:00Z, 2026-11-21T11:30:00Z]\n")
	require.Contains(t, r.stderr, "webhooks: delivered 1 record, 2 left in the outbox (1 refused, retried with their streams by the next run)\n")
	require.Equal(t, 3, countRuns(t, db), "every run recorded")

	mu.Lock()
	require.Equal(t, []string{"poll@2026-11-21T11:10:00Z"}, got)
	refuse = false
	mu.Unlock()
	r = run(t, clock, nil, backfill...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "no slot in it without a run")
	require.Contains(t, r.stderr, "(1 refused", "not before its backoff ends")
	clock.Advance(time.Second)
	once := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute", "--webhook", srv.URL)
	require.Equal(t, cli.ExitOK, once.code, once.stderr)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"poll@2026-11-21T11:10:00Z", "poll@2026-11-21T11:20:00Z", "poll@2026-11-21T11:30:00Z"}, got,
		"the schedule's runs in order, each once")
}

// prune deletes the recorded runs whose slot is before --before, or older
// than --older-than; a pruned slot is forgotten, so a backfill over it
// runs it again.
func TestSchedulePruneDeletesRunsBeforeATime(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start) // 12:00:30
			sched := scheduleOn(t, clock, db)
			ok(t, sched("add", "--name", "poll", "--spec", "@every 10m", "--command", "poll-inbox"))
			backfill := func() map[string]int {
				return slotIDs(pickRuns(t, ok(t, sched("backfill", "poll", "--from", "2026-11-21T10:55:00Z", "--to", "2026-11-21T11:30:00Z")), false))
			}
			require.Len(t, backfill(), 4, "11:00, 11:10, 11:20, 11:30")

			pruned := sched("prune", "--before", "2026-11-21T12:15", "--tz", "Europe/Warsaw")
			require.Equal(t, "pruned 2 runs with a slot before 2026-11-21T12:15:00+01:00\n", ok(t, pruned))
			require.Equal(t, map[string]int{"poll@2026-11-21T11:00:00Z": 1, "poll@2026-11-21T11:10:00Z": 1}, backfill(), "the pruned slots, forgotten, run again")

			// 12:00:30 less an hour: the run of 11:00 only.
			require.Equal(t, "pruned 1 run with a slot before 2026-11-21T11:00:30Z\n", ok(t, sched("prune", "--older-than", "1h")))
			require.Equal(t, "pruned 0 runs with a slot before 2026-11-21T11:00:30Z\n", ok(t, sched("prune", "--older-than", "1h")))
		})
	}
}

// scheduleOn returns a runner of "ticker schedule VERB --db db ARGS…" on
// clock: the subcommand first, then the database, then the rest.
func scheduleOn(t *testing.T, clock clockwork.Clock, db string) func(args ...string) result {
	return func(args ...string) result {
		return run(t, clock, nil, append([]string{"schedule", args[0], "--db", db}, args[1:]...)...)
	}
}

// An --until that would end a schedule before it fires is a flag error,
// and creates nothing: one already past — 0001-01-01 among them, Go's zero
// time, which the schedule package reads as no end at all — or one before
// the spec's next slot. One past what the database stores (2262) is too.
// An --until at the next slot itself is taken: the slot fires.
func TestScheduleAddRefusesAnUntilThatWouldNeverFire(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start) // 2026-11-21T12:00:30Z
	db := filepath.Join(t.TempDir(), "passage.db")
	add := func(spec string, args ...string) result {
		return run(t, clock, nil, append([]string{"schedule", "add", "--db", db, "--name", "report", "--command", "send-report", "--spec", spec}, args...)...)
	}
	for _, c := range []struct {
		spec string
		args []string
		want string
	}{
		{"@daily", []string{"--until", "0001-01-01"}, "--until 0001-01-01T00:00:00Z is already past (now is 2026-11-21T12:00:30Z): the schedule would never fire"},
		{"@daily", []string{"--until", "2020-01-01"}, "--until 2020-01-01T00:00:00Z is already past (now is 2026-11-21T12:00:30Z): the schedule would never fire"},
		{"@daily", []string{"--until", "2026-11-21T12:00:30Z"}, "--until 2026-11-21T12:00:30Z is already past (now is 2026-11-21T12:00:30Z): the schedule would never fire"},
		{"@daily", []string{"--until", "2026-11-21", "--tz", "Europe/Warsaw"}, "--until 2026-11-21T00:00:00+01:00 is already past (now is 2026-11-21T13:00:30+01:00): the schedule would never fire"},
		{"0 0 1 1 *", []string{"--until", "2026-12-31T23:59:59Z"}, "--until 2026-12-31T23:59:59Z is before the schedule's next slot 2027-01-01T00:00:00Z: the schedule would never fire"},
		{"@daily", []string{"--until", "2300-01-01"}, "--until 2300-01-01T00:00:00Z: after the last instant a schedule's end can be stored (2262-04-11T23:47:16.854775807Z)"},
	} {
		r := add(c.spec, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%q: %s", c.args, r.stderr)
		require.Equal(t, "ticker schedule: add: "+c.want, strings.TrimSpace(r.stderr), "%q", c.args)
		require.Empty(t, r.stdout)
	}
	_, err := os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused --until creates no database")

	require.Equal(t, "added report: next slot 2027-01-01T00:00:00Z\n", ok(t, add("0 0 1 1 *", "--until", "2027-01-01T00:00:00Z")))
}

// list shows a schedule's end — --max-runs and --until — in MAX RUNS and
// UNTIL columns, which appear only when a schedule has one (the table of
// schedules without an end stays as it was), and in --json as max_runs and
// until, left out when there is none. UNTIL is shown in --tz.
func TestScheduleListShowsMaxRunsAndUntil(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start)
			add := func(name string, args ...string) string {
				return ok(t, run(t, clock, nil, append([]string{"schedule", "add", "--db", db, "--name", name, "--spec", "@every 10m", "--command", name}, args...)...))
			}
			list := func(args ...string) string {
				return ok(t, run(t, clock, nil, append([]string{"schedule", "list", "--db", db}, args...)...))
			}
			add("plain")
			require.Equal(t, "NAME   NEXT SLOT             PAUSED  RUNS  SKIPPED  COMMAND  SPEC\n"+
				"plain  2026-11-21T12:10:00Z  no      0     0        plain    @every 10m0s from 1970-01-01T00:00:00Z\n", list(),
				"no MAX RUNS or UNTIL column while no schedule has an end")

			add("capped", "--max-runs", "3")
			add("dated", "--until", "2027-01-01T00:00:00+01:00")
			add("both", "--max-runs", "12", "--until", "2026-12-24", "--tz", "Europe/Warsaw")
			require.Equal(t, "NAME    NEXT SLOT             PAUSED  RUNS  SKIPPED  MAX RUNS  UNTIL                 COMMAND  SPEC\n"+
				"both    2026-11-21T12:10:00Z  no      0     0        12        2026-12-23T23:00:00Z  both     @every 10m0s from 1970-01-01T00:00:00Z\n"+
				"capped  2026-11-21T12:10:00Z  no      0     0        3         -                     capped   @every 10m0s from 1970-01-01T00:00:00Z\n"+
				"dated   2026-11-21T12:10:00Z  no      0     0        -         2026-12-31T23:00:00Z  dated    @every 10m0s from 1970-01-01T00:00:00Z\n"+
				"plain   2026-11-21T12:10:00Z  no      0     0        -         -                     plain    @every 10m0s from 1970-01-01T00:00:00Z\n", list())
			require.Regexp(t, `(?m)^dated\s+2026-11-21T13:10:00\+01:00\s+no\s+0\s+0\s+-\s+2027-01-01T00:00:00\+01:00\s+dated\s`, list("--tz", "Europe/Warsaw"), "UNTIL in --tz")

			add("spread", "--jitter", "1m")
			require.Regexp(t, `(?m)^NAME\s+NEXT SLOT\s+PAUSED\s+RUNS\s+SKIPPED\s+MAX RUNS\s+UNTIL\s+JITTER\s+OVERLAP\s+COMMAND\s+SPEC\n`+
				`both\s+\S+\s+no\s+0\s+0\s+12\s+2026-12-23T23:00:00Z\s+-\s+allow\s+both\s+@every`, list())
			require.Regexp(t, `(?m)^spread\s+\S+\s+no\s+0\s+0\s+-\s+-\s+1m0s\s+allow\s+spread\s+@every`, list())

			var listed []map[string]any
			require.NoError(t, json.Unmarshal([]byte(list("--json")), &listed))
			ends := map[string][2]any{}
			for _, l := range listed {
				ends[l["name"].(string)] = [2]any{l["max_runs"], l["until"]}
			}
			require.Equal(t, map[string][2]any{
				"both":   {12.0, "2026-12-23T23:00:00Z"},
				"capped": {3.0, nil},
				"dated":  {nil, "2026-12-31T23:00:00Z"},
				"plain":  {nil, nil},
				"spread": {nil, nil},
			}, ends)
		})
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
