package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
)

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
