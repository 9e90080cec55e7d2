package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

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
