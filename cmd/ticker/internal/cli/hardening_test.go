package cli_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
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
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

// guard bounds a command that, with the fix reverted, would never return
// (a daemon, a spinning computation): it is cancelled after a while, so the
// test fails on its result instead of hanging the suite.
const guard = 10 * time.Second

// runGuarded is run with ctx cancelled after guard.
func runGuarded(t *testing.T, clock clockwork.Clock, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	var stdout, stderr lockedBuffer
	code := cli.Main(ctx, args, cli.Env{Stdout: &stdout, Stderr: &stderr, Clock: clock, Grace: time.Second})
	return result{code, stdout.String(), stderr.String()}
}

// A signal (ctx cancelled) ends every command, even one whose computation
// never yields: after its grace period Main gives up on it.
func TestASignalEndsACommandThatNeverReturns(t *testing.T) {
	t.Parallel()
	spinning := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hang := func(u tick.Unit, after time.Time, loc *time.Location) time.Time {
		once.Do(func() { close(spinning) })
		<-release // a boundary computation that never returns, until cleanup
		return tick.Next(u, after, loc)
	}
	// The abandoned goroutine is let go when the test ends, for goleak.
	t.Cleanup(func() { close(release) })

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	env := cli.WithNextBoundary(cli.Env{Stdout: &stdout, Stderr: &stderr, Grace: 10 * time.Millisecond}, hang)
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"preview", "--unit", "year", "--tz", "Europe/Warsaw", "--from", "2026-01-01T00:00:00Z", "-n", "20"}, env)
	}()
	<-spinning
	cancel() // SIGINT
	select {
	case code := <-done:
		require.Equal(t, cli.ExitAbandoned, code)
		require.Contains(t, stderr.String(), "ticker preview: still running 10ms after being told to stop: abandoned")
	case <-time.After(guard):
		t.Fatal("preview ignored the signal")
	}
}

// Africa/Monrovia kept local mean time, -00:44:30, until 1972.
func monrovia(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	_, off := time.Date(1960, 1, 1, 0, 0, 0, 0, loc).Zone()
	require.Equal(t, -(44*60 + 30), off)
	return loc
}

func TestPreviewPrintsSecondsOffsetsThatParseBackToTheSameInstant(t *testing.T) {
	t.Parallel()
	loc := monrovia(t)
	r := run(t, nil, nil, "preview", "--unit", "day", "--tz", "Africa/Monrovia", "--from", "1960-01-01", "-n", "2")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4, r.stdout)
	require.Equal(t, "Next 2 day boundaries in Africa/Monrovia after 1960-01-01T00:00:00-00:44:30:", lines[0])
	for i, line := range lines[2:] {
		printed := strings.Fields(line)[0]
		got, err := timefmt.Parse(printed)
		require.NoError(t, err)
		want := time.Date(1960, 1, 2+i, 0, 0, 0, 0, loc)
		require.True(t, got.Equal(want), "%s is %s, want %s", printed, got.UTC(), want.UTC())
	}
	// What preview prints is a valid --from naming the same instant.
	again := run(t, nil, nil, "preview", "--unit", "day", "--tz", "Africa/Monrovia", "--from", "1960-01-01T00:00:00-00:44:30", "-n", "2")
	require.Equal(t, r, again)
}

// checkLossless asserts that body's boundary is printed with the offset's
// seconds and reads back, as text and as a sink.Record, as want.
func checkLossless(t *testing.T, body []byte, want time.Time) {
	t.Helper()
	var raw map[string]any
	require.NoError(t, json.Unmarshal(body, &raw))
	printed, _ := raw["boundary"].(string)
	require.True(t, strings.HasSuffix(printed, "-00:44:30"), "boundary %q", printed)
	parsed, err := timefmt.Parse(printed)
	require.NoError(t, err)
	require.True(t, parsed.Equal(want), "%s names %s, want %s", printed, parsed.UTC(), want.UTC())
	var rec sink.Record
	require.NoError(t, json.Unmarshal(body, &rec))
	require.True(t, rec.Boundary.Equal(want))
	_, off := rec.Boundary.Zone()
	require.Equal(t, -(44*60 + 30), off, "the offset survives too")
}

func TestJSONLinesCarrySecondsOffsetsLosslessly(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(time.Date(1971, 6, 1, 12, 0, 0, 0, time.UTC))
	db := filepath.Join(t.TempDir(), "passage.db")
	args := []string{"run", "--once", "--db", db, "--units", "minute", "--tz", "Africa/Monrovia"}
	require.Equal(t, cli.ExitOK, run(t, clock, nil, args...).code)
	clock.Advance(2 * time.Minute)
	r := run(t, clock, nil, args...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	loc := monrovia(t)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r.stdout)
	for i, line := range lines {
		// Monrovia's minutes start 30 s into a UTC minute: 11:16 and 11:17 local.
		checkLossless(t, []byte(line), time.Date(1971, 6, 1, 11, 16+i, 0, 0, loc))
	}
	require.Contains(t, r.stderr, "cursors at minute 1971-06-01T11:17:00-00:44:30")
}

func TestWebhooksCarrySecondsOffsetsLosslessly(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, body)
	}))
	t.Cleanup(srv.Close)
	clock := clockwork.NewFakeClockAt(time.Date(1971, 6, 1, 12, 0, 0, 0, time.UTC))
	db := filepath.Join(t.TempDir(), "passage.db")
	args := []string{"run", "--once", "--db", db, "--units", "minute", "--tz", "Africa/Monrovia", "--webhook", srv.URL}
	require.Equal(t, cli.ExitOK, run(t, clock, nil, args...).code)
	clock.Advance(2 * time.Minute)
	r := run(t, clock, nil, args...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	loc := monrovia(t)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 2)
	for i, body := range bodies {
		checkLossless(t, body, time.Date(1971, 6, 1, 11, 16+i, 0, 0, loc))
	}
}

// A local time or date the zone skipped or repeated is never read as
// another one: a date means its first instant, and what cannot be resolved
// is a flag error naming the gap or both offsets.
func TestLocalTimesThatDoNotExistOrRepeatAreResolvedOrRejected(t *testing.T) {
	t.Parallel()
	header := func(args ...string) string {
		t.Helper()
		r := run(t, nil, nil, append([]string{"preview", "-n", "1"}, args...)...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		first, _, _ := strings.Cut(r.stdout, "\n")
		return first
	}
	// São Paulo skipped midnight on 2018-11-04: the day starts at 01:00.
	require.Equal(t, "Next 1 hour boundaries in America/Sao_Paulo after 2018-11-04T01:00:00-02:00:",
		header("--unit", "hour", "--tz", "America/Sao_Paulo", "--from", "2018-11-04"))
	require.Equal(t, "Next 1 day boundaries in Europe/Warsaw after 2026-03-29T03:30:00+02:00:",
		header("--tz", "Europe/Warsaw", "--from", "2026-03-29T03:30"))

	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"preview", "--tz", "Pacific/Apia", "--from", "2011-12-30"},
			[]string{`--from "2011-12-30": the date does not exist in Pacific/Apia`, "2011-12-29 23:59:59 (-10:00)", "2011-12-31 00:00 (+14:00)"}},
		{[]string{"preview", "--tz", "Europe/Warsaw", "--from", "2026-03-29T02:30"},
			[]string{`--from "2026-03-29T02:30": 2026-03-29 02:30 does not exist in Europe/Warsaw`, "(+01:00) to 03:00 (+02:00)"}},
		{[]string{"preview", "--tz", "Europe/Warsaw", "--from", "2026-10-25T02:30"},
			[]string{`--from "2026-10-25T02:30": 2026-10-25 02:30 happens 2 times in Europe/Warsaw (offsets +02:00 and +01:00)`, "2026-10-25T02:30:00+02:00 or 2026-10-25T02:30:00+01:00"}},
		{[]string{"run", "--tz", "Europe/Warsaw", "--until", "2025-03-30T02:30", "--db", filepath.Join(t.TempDir(), "x.db")},
			[]string{`--until "2025-03-30T02:30": 2025-03-30 02:30 does not exist in Europe/Warsaw`}},
	}
	for _, c := range cases {
		r := runGuarded(t, nil, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		for _, want := range c.want {
			require.Contains(t, r.stderr, want, c.args)
		}
	}
}

func TestOutOfRangeDurationsAndUntilAreFlagErrors(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db).code)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--lease-ttl", "1ns"}, "--lease-ttl 1ns: must be between 1s and 24h0m0s"},
		{[]string{"--lease-ttl", "300000h"}, "--lease-ttl 300000h0m0s: must be between"},
		{[]string{"--catch-up-window", "300000h"}, "--catch-up-window 300000h0m0s: must be between"},
		{[]string{"--webhook-backoff", "0s"}, "--webhook-backoff 0s: must be between"},
		{[]string{"--until", "0001-01-01"}, `--until "0001-01-01": outside the years a cursor can hold`},
	}
	for _, c := range cases {
		r := runGuarded(t, clock, append([]string{"run", "--db", db}, c.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want)
	}
	// Behind every cursor: a no-op, said so.
	r := runGuarded(t, clock, "run", "--db", db, "--until", "2000-01-01")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "nothing to backfill up to 2000-01-01T00:00:00Z")
}

// fileState is what must not change about a refused database.
func fileState(t *testing.T, path string) string {
	t.Helper()
	var state []string
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			state = append(state, p+": none")
			continue
		}
		require.NoError(t, err)
		state = append(state, fmt.Sprintf("%s: %x", p, sha256.Sum256(b)))
	}
	return strings.Join(state, "\n")
}

func TestDemoRefusesADatabaseThatHoldsAnything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()

	// A real ticker's database, and one holding someone else's table.
	ticker := filepath.Join(dir, "ticker.db")
	require.Equal(t, cli.ExitOK, run(t, clockwork.NewFakeClockAt(start), nil, "run", "--once", "--db", ticker).code)
	other := filepath.Join(dir, "other.db")
	db, err := sqldb.Open(ctx, other)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE invoices (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	// An earlier demo's database: a second story on it would come out wrong.
	demo := filepath.Join(dir, "demo.db")
	require.Equal(t, cli.ExitOK, run(t, nil, nil, "demo", "--db", demo, "--orders", "3").code)

	for _, path := range []string{ticker, other, demo} {
		before := fileState(t, path)
		r := run(t, nil, nil, "demo", "--db", path, "--orders", "3")
		require.Equal(t, cli.ExitError, r.code, "%s: %s", path, r.stdout)
		require.Contains(t, r.stderr, "not empty")
		require.Empty(t, r.stdout, "the story did not start")
		require.Equal(t, before, fileState(t, path), "%s unchanged", path)
	}

	// A new file and an empty one are fine.
	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for _, path := range []string{filepath.Join(dir, "new.db"), empty} {
		r := run(t, nil, nil, "demo", "--db", path, "--orders", "3")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
}

func TestDemoRejectsNonFiniteAndOutOfRangeShares(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"NaN", "nan", "Inf", "-Inf", "-0.1", "1.5"} {
		r := run(t, nil, nil, "demo", "--paid", v)
		require.Equal(t, cli.ExitUsage, r.code, "--paid %s: %s", v, r.stdout)
		require.Contains(t, r.stderr, "--paid ")
		require.Contains(t, r.stderr, "must be between 0 and 1")
	}
}

// sqliteTables lists a SQLite file's tables through a read-only connection.
func sqliteTables(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	return names
}

func TestStatusOnNothingSaysSoAndCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	r := run(t, nil, nil, "status", "--db", missing)
	require.Equal(t, cli.ExitError, r.code)
	require.Contains(t, r.stderr, "--db "+missing+": no such database (nothing was created)")
	_, err := os.Stat(missing)
	require.True(t, os.IsNotExist(err), "status created %s", missing)

	ctx := context.Background()
	other := filepath.Join(dir, "other.db")
	db, err := sqldb.Open(ctx, other)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE invoices (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	before := fileState(t, other)
	r = run(t, nil, nil, "status", "--db", other)
	require.Equal(t, cli.ExitError, r.code)
	require.Equal(t, before, fileState(t, other), "status created or changed no file")
	require.Contains(t, r.stderr, "holds no ticker state")
	require.Equal(t, []string{"invoices"}, sqliteTables(t, other), "status created no tables")
}

// holdWriteLock opens path as another process would and holds a write
// transaction on it until the test ends.
func holdWriteLock(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `CREATE TABLE held (id INTEGER)`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = tx.Rollback()
		_ = db.Close()
	})
}

func TestStatusAnswersWhileAnotherProcessWrites(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", path).code)
	holdWriteLock(t, path)

	began := time.Now()
	r := runGuarded(t, clock, "status", "--db", path, "--json")
	took := time.Since(began)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Less(t, took, time.Second, "status waited for the writer")
	require.Contains(t, r.stdout, `"unit": "minute"`)
}

func TestMetricsAnswerWhileAnotherProcessWrites(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := filepath.Join(t.TempDir(), "passage.db")
	// Without schedules: the scheduler would create its to-do list tables,
	// and this test checks that /metrics creates none.
	r := startRun(t, clock, "--db", path, "--units", "minute", "--http", "127.0.0.1:0", "--schedules=false")
	// Cleanups run last first: the writer lets go, then the run stops.
	t.Cleanup(func() { require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String()) })
	holdWriteLock(t, path)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, serverURL(t, r)+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "/metrics must answer within a second")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	// Read in the same collection as the to-do lists, after them: none
	// shows if that read failed.
	require.Contains(t, string(body), "# TYPE passage_delivery_backlog gauge")
	require.NotContains(t, string(body), "unavailable")
	require.NotContains(t, sqliteTables(t, path), "todolist_items", "/metrics created no tables")
}

// serverURL is the base URL a run serving --http printed.
func serverURL(t *testing.T, r *background) string {
	t.Helper()
	_, addr, ok := strings.Cut(r.stderr.String(), "serving /healthz, /metrics and the dashboard on ")
	require.True(t, ok, r.stderr.String())
	return strings.TrimSpace(strings.SplitN(addr, "\n", 2)[0])
}

func TestStatusOnPostgresIsReadOnly(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("PASSAGE_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("PASSAGE_TEST_POSTGRES not set")
	}
	ctx := context.Background()
	admin, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	defer admin.Close()
	schema := fmt.Sprintf("status_ro_%d", time.Now().UnixNano())
	_, err = admin.ExecContext(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	r := run(t, nil, nil, "status", "--db", u.String())
	require.Equal(t, cli.ExitError, r.code, r.stdout)
	require.Contains(t, r.stderr, "holds no ticker state")
	var n int
	require.NoError(t, admin.GetContext(ctx, &n, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = $1`, schema))
	require.Zero(t, n, "status created tables")

	// With a ticker's state, status reads it.
	clock := clockwork.NewFakeClockAt(start)
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", u.String(), "--units", "hour").code)
	r = run(t, clock, nil, "status", "--db", u.String())
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Regexp(t, `hour\s+2026-11-21T12:00:00Z`, r.stdout)
}

// leaseHolder reads the lease holder as status reports it ("" for none).
func leaseHolder(t *testing.T, clock clockwork.Clock, db string) string {
	t.Helper()
	r := run(t, clock, nil, "status", "--db", db, "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var report struct {
		Lease *struct{ Holder string } `json:"lease"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	if report.Lease == nil {
		return ""
	}
	return report.Lease.Holder
}

// A cron job on another host, a second after this one, can emit: --once and
// --until give the lease back when they stop.
func TestOnceAndUntilReleaseTheLease(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	first := run(t, clock, nil, "run", "--once", "--db", db, "--holder", "host-a")
	require.Equal(t, cli.ExitOK, first.code, first.stderr)
	require.Equal(t, "once: emitted 0 events; first run for minute, hour, day: the cursor starts at the latest boundary and the next run emits what passes after it; "+
		"cursors at minute 2026-11-21T12:00:00Z, hour 2026-11-21T12:00:00Z, day 2026-11-21T00:00:00Z; lease released; delivered 0 records\n", first.stderr)
	require.Empty(t, leaseHolder(t, clock, db))

	clock.Advance(time.Second)
	second := run(t, clock, nil, "run", "--once", "--db", db, "--holder", "host-b")
	require.Equal(t, cli.ExitOK, second.code, "host-b waited for host-a's lease: %s", second.stderr)
	require.Empty(t, leaseHolder(t, clock, db))

	clock.Advance(3 * time.Minute)
	backfill := run(t, clock, nil, "run", "--db", db, "--holder", "host-a", "--until", "2026-11-21T12:02:00Z")
	require.Equal(t, cli.ExitOK, backfill.code, backfill.stderr)
	require.Len(t, records(t, backfill.stdout), 2)
	require.Empty(t, leaseHolder(t, clock, db))
	third := run(t, clock, nil, "run", "--once", "--db", db, "--holder", "host-b")
	require.Equal(t, cli.ExitOK, third.code, "host-b waited for host-a's lease: %s", third.stderr)
	require.Contains(t, third.stderr, "once: emitted 1 event (minute 1); cursors at minute 2026-11-21T12:03:00Z")
}

func TestFlagErrorsNameTheFlagAndExit2(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--once", "--db", db, "--catch-up", "minute=all", "--catch-up", "minute=skip"}, `invalid value "minute=skip" for flag -catch-up: given twice ("minute=all" and "minute=skip")`},
		{[]string{"run", "--once", "--once", "--db", db}, `flag once: given twice`},
		{[]string{"status", "--db", db, "--db", db}, `flag -db: given twice`},
		{[]string{"preview", "-n", "2", "-n", "3"}, `flag -n: given twice`},
		{[]string{"run", "--once", "--db", db, "--http", "127.0.0.1:0"}, `--http "127.0.0.1:0": serves only while "ticker run" keeps running, not with --once or --until`},
		{[]string{"run", "--db", db, "--until", "2026-11-21T10:00:00Z", "--http", "127.0.0.1:0"}, `--http "127.0.0.1:0"`},
		{[]string{"run", "--once", "--db", db, "--http", "127.0.0.1:99999"}, `--http "127.0.0.1:99999"`},
		{[]string{"run", "--once", "--db", db, "--webhook-attempts", "0"}, "--webhook-attempts 0: must be between 1 and 100000"},
		{[]string{"run", "--once", "--db", db, "--catch-up-max", "0"}, "--catch-up-max 0: must be between 1 and"},
		{[]string{"run", "--once", "--until", "2026-11-21T10:00:00Z", "--db", db}, `--once and --until "2026-11-21T10:00:00Z": choose one`},
		{[]string{"demo", "--orders", "0"}, "--orders 0"},
	}
	for _, c := range cases {
		r := runGuarded(t, clock, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.Empty(t, r.stdout, c.args)
	}
}

// /healthz reports delivery that falls behind: 503 and the sink while its
// oldest pending record is more than 5 minutes old, 200 again once the
// receiver took it.
func TestHealthzAnswers503WhileDeliveryIsBehind(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	down := true
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		got = append(got, r.Header.Get(sink.HeaderIdempotency))
	}))
	t.Cleanup(srv.Close)
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	r := startRun(t, clock, "--db", db, "--units", "minute", "--http", "127.0.0.1:0", "--webhook", srv.URL)
	defer func() { require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String()) }()
	base := serverURL(t, r)
	healthz := func() (int, string) {
		resp, err := http.Get(base + "/healthz")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := healthz()
	require.Equal(t, http.StatusOK, code, body)

	for range 7 { // 12:01 … 12:07, all refused
		require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
	}
	// The relay refuses on a goroutine of its own, woken by the commits.
	behind := "is behind: 7 records pending, the oldest recorded 6m0s ago at 2026-11-21T12:01:30Z (limit 5m0s), 1 refused and waiting for a retry"
	require.Eventually(t, func() bool { _, body = healthz(); return strings.Contains(body, behind) }, 10*time.Second, 5*time.Millisecond, body)
	code, body = healthz()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "delivery: webhook "+srv.URL+" #")
	require.Contains(t, r.stderr.String(), "delivery refused; retried with backoff under the same key")

	mu.Lock()
	down = false
	mu.Unlock()
	// The refused record's retry is due on the run's (fake) clock; a
	// minute more (at most a few, on a loaded machine) brings it.
	minutes := 7
	healthy := func() bool { code, _ := healthz(); return code == http.StatusOK }
	for ; minutes < 11; minutes++ {
		require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
		if within(3*time.Second, healthy) {
			break
		}
	}
	require.Eventually(t, healthy, 10*time.Second, 5*time.Millisecond, "healthy again once the receiver takes the records")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "minute/2026-11-21T12:01:00Z", got[0], "in order, after the refusals")
	require.Len(t, got, minutes+1)
}
