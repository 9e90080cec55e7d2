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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
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
	var minute time.Time
	for line := range strings.Lines(out) {
		var head struct {
			Type     string     `json:"type"`
			Boundary *sink.Time `json:"boundary"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &head), line)
		switch head.Type {
		case "MinuteHasPassed":
			minute = head.Boundary.Time
		case "ScheduleRun":
			var r scheduleRun
			require.NoError(t, json.Unmarshal([]byte(line), &r), line)
			r.Raw = line
			if onMinutes && !r.Manual {
				require.False(t, r.Slot.After(minute), "%s published before its minute (%s)", r.SlotID, minute)
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
			sched := func(args ...string) result {
				return run(t, clock, nil, append([]string{"schedule", args[0], "--db", db}, args[1:]...)...)
			}
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
			runs := scheduleRuns(t, r.stdout.String())
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
					require.Contains(t, run.Raw, `"slot":"`+tick.FormatTime(run.Slot.Time)+`"`)
				}
			}
			require.Contains(t, runs[len(runs)-1].Raw, `"slot":"2026-11-21T12:09:00Z","fired_at":"2026-11-21T12:09:30Z"`)

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

			// --once fires what is due too, and nothing twice.
			clock.Advance(3 * time.Minute) // 12:12:30
			once := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute")
			require.Equal(t, map[string]int{"report@2026-11-21T12:12:00Z": 1}, slotIDs(scheduleRuns(t, ok(t, once))))
			require.Contains(t, once.stderr, "; published 1 schedule run")
			again := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute")
			require.Empty(t, ok(t, again))
		})
	}
}

// A sink that refuses a run rolls its firing back: the slot is fired again
// after the backoff, under the same slot id, with a new run id and the next
// attempt, and the receiver that took the minutes does not get them twice.
func TestARefusedRunIsRetriedUnderTheSameSlotID(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []scheduleRun
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
		got = append(got, run)
		if refused == 0 {
			refused++
			http.Error(w, "not now", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)

	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 5m", "--command", "poll"))
	r := startRun(t, clock, "--db", db, "--units", "minute", "--webhook", srv.URL, "--webhook-attempts", "1")
	for range 8 { // 12:01 … 12:08
		require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
	}
	require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2, "refused once, then taken: %+v", got)
	first, retry := got[0], got[1]
	require.Equal(t, "poll@2026-11-21T12:05:00Z", first.SlotID)
	require.Equal(t, first.SlotID, retry.SlotID, "the same slot id")
	require.NotEqual(t, first.RunID, retry.RunID)
	require.Equal(t, []int{1, 2}, []int{first.Attempt, retry.Attempt})
	require.True(t, retry.FiredAt.After(first.FiredAt.Time))
	require.Contains(t, r.stderr.String(), "schedule run failed; the slot is retried under the same slot id")
	require.Len(t, minutes, 8, "each minute once: %v", minutes)

	var listed []struct{ Runs int64 }
	require.NoError(t, json.Unmarshal([]byte(ok(t, run(t, clock, nil, "schedule", "list", "--db", db, "--json"))), &listed))
	require.Equal(t, int64(1), listed[0].Runs, "the refused attempt left no run recorded")
}

func TestScheduleCommandFlagErrors(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "passage.db")
	add := func(args ...string) []string {
		return append([]string{"schedule", "add", "--db", db, "--name", "poll", "--command", "poll"}, args...)
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
		{[]string{"schedule", "pause", "--db", db}, "give exactly one schedule name (got 0)"},
		{[]string{"schedule", "delete", "--db", db, "a", "b"}, "give exactly one schedule name (got 2)"},
		{[]string{"schedule", "resume", "poll", "--nonsense"}, "-nonsense"},
		{[]string{"schedule", "trigger", "--db", db, "--webhook", "ftp://example.com/x", "poll"}, `--webhook "ftp://example.com/x"`},
		{[]string{"schedule", "list", "--db", db, "--tz", "Nowhere"}, `--tz "Nowhere"`},
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

// list, pause, resume, trigger and delete only read a database that holds
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
	require.Equal(t, tables, sqliteTables(t, db), "no table was created")

	missing := filepath.Join(dir, "typo.db")
	r := run(t, clock, nil, "schedule", "list", "--db", missing)
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
