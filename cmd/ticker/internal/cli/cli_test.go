package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var start = time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)

// lockedBuffer is an io.Writer the command and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type result struct {
	code           int
	stdout, stderr string
}

// run executes the command line synchronously, as a user would.
func run(t *testing.T, clock clockwork.Clock, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr lockedBuffer
	code := cli.Main(context.Background(), args, cli.Env{
		Stdout: &stdout, Stderr: &stderr, Clock: clock,
		Getenv: func(k string) string { return env[k] },
	})
	return result{code, stdout.String(), stderr.String()}
}

// records decodes JSON lines.
func records(t *testing.T, out string) []sink.Record {
	t.Helper()
	var recs []sink.Record
	for line := range strings.Lines(out) {
		var r sink.Record
		require.NoError(t, json.Unmarshal([]byte(line), &r), "line %q", line)
		recs = append(recs, r)
	}
	return recs
}

func boundaries(recs []sink.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Boundary.UTC().Format("15:04"))
	}
	return out
}

// background is "ticker run" in its own goroutine, as a process a signal
// will stop: cancel is SIGINT/SIGTERM, done receives the exit code.
type background struct {
	ticker         *tick.Ticker
	stdout, stderr *lockedBuffer
	cancel         context.CancelFunc
	done           chan int
}

// startRun starts "ticker run args..." on clock and returns once its ticker
// has started.
func startRun(t testing.TB, clock clockwork.Clock, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *tick.Ticker, 1)
	r := &background{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		r.done <- cli.Main(ctx, append([]string{"run"}, args...), cli.Env{
			Stdout: r.stdout, Stderr: r.stderr, Clock: clock,
			Started: func(tk *tick.Ticker) { started <- tk },
		})
	}()
	select {
	case r.ticker = <-started:
	case code := <-r.done:
		t.Fatalf("ticker run exited with %d before starting: %s", code, r.stderr.String())
	}
	return r
}

// waitRecords waits until the run's stdout holds n records: the relays
// deliver after the ticker's pass committed, on goroutines of their own
// that a record's commit wakes.
func (r *background) waitRecords(t *testing.T, n int) []sink.Record {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Count(r.stdout.String(), "\n") >= n }, 10*time.Second, time.Millisecond,
		"%d records on stdout: %s", n, r.stdout.String())
	return records(t, r.stdout.String())
}

// stop signals the run and returns its exit code.
func (r *background) stop() int {
	r.cancel()
	return <-r.done
}

func TestRunPublishesJSONLinesAndSavesTheCursorOnSignal(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	r := startRun(t, clock, "--db", db, "--units", "minute")
	for range 3 {
		require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
	}
	require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())

	recs := records(t, r.stdout.String())
	require.Equal(t, []string{"12:01", "12:02", "12:03"}, boundaries(recs))
	for i, r := range recs {
		require.Equal(t, "MinuteHasPassed", r.Type)
		require.Equal(t, tick.Minute, r.Unit)
		require.False(t, r.CatchUp, "emitted on time")
		if i > 0 {
			require.Equal(t, *recs[i-1].Boundary, *r.Previous)
		}
	}

	status := run(t, clock, nil, "status", "--db", db, "--json")
	require.Equal(t, cli.ExitOK, status.code, status.stderr)
	var report struct {
		Units []struct {
			Unit   string    `json:"unit"`
			Cursor time.Time `json:"cursor"`
		} `json:"units"`
	}
	require.NoError(t, json.Unmarshal([]byte(status.stdout), &report))
	require.Len(t, report.Units, 1)
	require.Equal(t, "minute", report.Units[0].Unit)
	require.True(t, report.Units[0].Cursor.Equal(recs[2].Boundary.Time), "the cursor was saved at the last emitted boundary")
}

func TestOnceTwiceEmitsExactlyTheBoundariesInBetween(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	once := func() []sink.Record {
		r := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute,hour")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		return records(t, r.stdout)
	}
	first := once()
	clock.Advance(75 * time.Minute) // 12:00:30 → 13:15:30
	second := once()
	third := once()

	seen := map[string]bool{}
	for _, r := range append(first, second...) {
		require.False(t, seen[r.ID], "%s emitted twice", r.ID)
		seen[r.ID] = true
	}
	var minutes, hours int
	for _, r := range second {
		require.True(t, r.Boundary.After(start) && !r.Boundary.After(clock.Now()), "boundary %s outside (first run, second run]", r.Boundary)
		switch r.Unit {
		case tick.Minute:
			minutes++
		case tick.Hour:
			hours++
		}
	}
	require.Equal(t, 75, minutes, "12:01 … 13:15")
	require.Equal(t, 1, hours, "13:00")
	require.Empty(t, third, "nothing passed since the second run")
}

func TestWebhookReceiverThatRecoversGetsEveryEventOnceInOrder(t *testing.T) {
	t.Parallel()
	secret := []byte("shared-secret")
	var mu sync.Mutex
	refusals := 3
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if refusals > 0 {
			refusals--
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		if !sink.Verify(secret, body, r.Header.Get(sink.HeaderSignature)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		got = append(got, r.Header.Get(sink.HeaderIdempotency))
	}))
	t.Cleanup(srv.Close)

	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	env := map[string]string{"HOOK_SECRET": string(secret)}
	args := []string{"run", "--once", "--db", db, "--units", "minute", "--webhook", srv.URL,
		"--webhook-secret-env", "HOOK_SECRET", "--webhook-backoff", "1ms"}

	require.Equal(t, cli.ExitOK, run(t, clock, env, args...).code)
	clock.Advance(3 * time.Minute)
	// Each run records its minutes and delivers until the receiver
	// refuses: the refused record waits, with its stream, for the next.
	for i := range 3 {
		down := run(t, clock, env, args...)
		require.Equal(t, cli.ExitOK, down.code, "a refusal leaves the record for the next run: %s", down.stderr)
		require.Contains(t, down.stderr, "delivered 0 records, 3 left in the outbox (1 refused, retried with their streams by the next run)")
		if i == 0 {
			require.Contains(t, down.stderr, "delivery refused; retried with backoff under the same key")
		} else {
			require.NotContains(t, down.stderr, "delivery refused", "logged once for the record: later refusals are counted")
		}
		clock.Advance(time.Second) // past the backoff
	}
	up := run(t, clock, env, args...)
	require.Equal(t, cli.ExitOK, up.code, up.stderr)
	require.Contains(t, up.stderr, "delivered 3 records")
	require.Empty(t, up.stdout, "with --webhook, stdout carries no events")

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{
		"minute/2026-11-21T12:01:00Z", "minute/2026-11-21T12:02:00Z", "minute/2026-11-21T12:03:00Z",
	}, got)
}

func TestUntilBackfillsToAPastInstant(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour").code)
	clock.Advance(5 * time.Hour)
	r := run(t, clock, nil, "run", "--db", db, "--units", "hour", "--until", "2026-11-21T15:00:00Z")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, []string{"13:00", "14:00", "15:00"}, boundaries(records(t, r.stdout)))
}

func TestBadInputIsNamedAndFails(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--db", db, "--tz", "Mars/Olympus"}, `--tz "Mars/Olympus"`},
		{[]string{"run", "--db", db, "--units", "minute,fortnight"}, `"fortnight" is not a unit`},
		{[]string{"run", "--db", db, "--catch-up", "hour=sometimes"}, `policy "sometimes"`},
		{[]string{"run", "--db", "mysql://root@localhost/x"}, "--db"},
		{[]string{"run", "--db", "postgres://u@127.0.0.1:1/x?connect_timeout=2"}, "127.0.0.1:1"},
		{[]string{"run", "--db", db, "--until", "2030-01-01T00:00:00Z"}, "--until 2030-01-01T00:00:00Z is in the future"},
		{[]string{"run", "--db", db, "--until", "yesterday"}, `--until "yesterday"`},
		{[]string{"run", "--db", db, "--webhook", "ftp://example.com/hook"}, `--webhook "ftp://example.com/hook"`},
		{[]string{"run", "--db", db, "--catch-up-window", "-1h"}, "--catch-up-window"},
		{[]string{"run", "--db", db, "--http", "9090"}, `--http "9090"`},
		{[]string{"run", "--nonsense"}, "-nonsense"},
		{[]string{"status", "--db", db, "--tz", "Nowhere"}, `--tz "Nowhere"`},
		{[]string{"preview", "--unit", "fortnight"}, `--unit "fortnight"`},
		{[]string{"preview", "-n", "0"}, "-n 0"},
		{[]string{"preview", "--from", "soon"}, `--from "soon"`},
		{[]string{"preview", "-n", "abc"}, `invalid value "abc" for flag -n`},
		{[]string{"explode"}, `unknown command "explode"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			r := run(t, clock, nil, c.args...)
			require.NotEqual(t, cli.ExitOK, r.code)
			require.Contains(t, r.stderr, c.want)
			require.Empty(t, r.stdout, "errors and their hints go to stderr")
		})
	}
}

func TestPreviewShowsTheShortDSTDay(t *testing.T) {
	t.Parallel()
	r := run(t, nil, nil, "preview", "--unit", "day", "--tz", "Europe/Warsaw", "--from", "2026-03-28T12:00:00+01:00", "-n", "2")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4, r.stdout)
	require.Regexp(t, `^2026-03-29T00:00:00\+01:00\s+Sun\s+23h0m0s\s+UTC offset changes \+01:00 → \+02:00$`, lines[2])
	require.Regexp(t, `^2026-03-30T00:00:00\+02:00\s+Mon\s+24h0m0s\s*$`, lines[3])
}

func TestHelpAndVersionExitZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"run", "-h"}, {"status", "-h"}, {"preview", "-h"}, {"demo", "-h"}, {"version"}} {
		r := run(t, nil, nil, args...)
		require.Equal(t, cli.ExitOK, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stdout, "%v", args)
	}
	require.Equal(t, cli.ExitUsage, run(t, nil, nil).code, "no command is a usage error")
}

// Every subcommand's -h lists its flags with their types and defaults,
// GNU-style since the commands are cobra's: "--db string" (Go's flag
// package printed "-db string" on a line of its own).
func TestHelpListsEveryFlagWithItsDefault(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run"}, {"status"}, {"preview"}, {"serve"}, {"demo"},
		{"schedule", "preview"}, {"schedule", "add"}, {"schedule", "list"}, {"schedule", "pause"}, {"schedule", "resume"},
		{"schedule", "trigger"}, {"schedule", "backfill"}, {"schedule", "delete"},
		{"workflow", "list"}, {"workflow", "show"}, {"workflow", "signal"}, {"workflow", "cancel"},
	} {
		r := run(t, nil, nil, append(args, "-h")...)
		require.Equal(t, cli.ExitOK, r.code, "%v: %s", args, r.stderr)
		require.NotContains(t, r.stdout, "panic", "%v", args)
		require.Contains(t, r.stdout, "Flags:\n", "%v", args)
	}
	add := run(t, nil, nil, "schedule", "add", "-h").stdout
	for _, want := range []string{
		"      --db string ", `(default "passage.db")`, "      --jitter duration ", "      --overlap string ", `(default "allow")`,
		"      --max-runs int ", "      --catch-up-window duration ", "(default 168h0m0s)",
	} {
		require.Contains(t, add, want)
	}
	backfill := run(t, nil, nil, "schedule", "backfill", "-h").stdout
	for _, want := range []string{"      --from string ", "      --to string ", `(default "UTC")`, "      --webhook URL ", "(default 360)", "      --stdout "} {
		require.Contains(t, backfill, want)
	}
}

func TestRunServesHealthAndMetrics(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	r := startRun(t, clock, "--db", db, "--units", "minute,hour", "--http", "127.0.0.1:0")
	// Two minutes at once: one wake-up emits both boundaries.
	require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, 2*time.Minute, r.ticker))

	_, addr, ok := strings.Cut(r.stderr.String(), "serving /healthz, /metrics and the dashboard on ")
	require.True(t, ok, r.stderr.String())
	base := strings.TrimSpace(strings.SplitN(addr, "\n", 2)[0])
	get := func(path string) string {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}
	emitted := len(r.waitRecords(t, 2))
	require.Equal(t, 2, emitted)
	require.Equal(t, "ok\n", get("/healthz"))
	metrics := get("/metrics")
	require.Contains(t, metrics, `passage_tick_boundaries_emitted_total{unit="minute"} `+strconv.Itoa(emitted))
	// Read from the database in the same collection as the to-do lists'
	// figures (which this database, holding no list, has no series of:
	// TestMetricsFollowTheFakeClock asserts them).
	require.Contains(t, metrics, "# TYPE passage_delivery_backlog gauge")

	require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())
}

func TestStatusWarnsWhenTheZoneDiffersFromTheTickers(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour", "--tz", "Asia/Kathmandu").code)

	same := run(t, clock, nil, "status", "--db", db, "--tz", "Asia/Kathmandu")
	require.NotContains(t, same.stdout, "warning")
	other := run(t, clock, nil, "status", "--db", db)
	require.Contains(t, other.stdout, "warning: the hour cursor 2026-11-21T11:15:00Z is not on a boundary of unit hour in UTC")
}

func TestUntilWithNothingToBackfillSaysSoAndSucceeds(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour").code)
	r := run(t, clock, nil, "run", "--db", db, "--units", "hour", "--until", "2026-11-21T09:00:00Z")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "nothing to backfill up to 2026-11-21T09:00:00Z")
}

// A SIGTERM while a catch-up is being delivered to a slow receiver ends
// the run with exit 0; what was recorded stays in the outbox, and the
// next run delivers the rest. The request in flight may reach the
// receiver and still count as not delivered (the run stopped before its
// answer, whichever record it was by then): it comes again under the same
// Idempotency-Key. None is lost.
func TestSignalDuringACatchUpLosesNothing(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	inFlight := make(chan struct{})
	var once sync.Once
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(sink.HeaderIdempotency)
		if key == "minute/2026-11-21T12:03:00Z" {
			once.Do(func() { close(inFlight); <-release })
		}
		mu.Lock()
		got = append(got, key)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	delivered := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}

	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	args := []string{"--db", db, "--units", "minute", "--webhook", srv.URL}
	require.Equal(t, cli.ExitOK, run(t, clock, nil, append([]string{"run", "--once"}, args...)...).code)
	clock.Advance(10 * time.Minute) // 12:01 … 12:10 are due

	r := startRun(t, clock, args...)
	<-inFlight // 12:01 and 12:02 delivered, 12:03 on the wire
	r.cancel() // SIGTERM
	close(release)
	require.Equal(t, cli.ExitOK, <-r.done, r.stderr.String())
	require.GreaterOrEqual(t, len(delivered()), 2)

	rest := run(t, clock, nil, append([]string{"run", "--once"}, args...)...)
	require.Equal(t, cli.ExitOK, rest.code, rest.stderr)
	all := delivered()
	var want, firsts []string
	seen := map[string]int{}
	for i := range 10 {
		want = append(want, fmt.Sprintf("minute/2026-11-21T12:%02d:00Z", i+1))
	}
	for _, key := range all {
		if seen[key]++; seen[key] == 1 {
			firsts = append(firsts, key)
		}
	}
	require.Equal(t, want, firsts, "every minute, in order: %v", all)
	again := 0
	for key, n := range seen {
		require.LessOrEqual(t, n, 2, "%s delivered %d times", key, n)
		again += n - 1
	}
	require.LessOrEqual(t, again, 1, "only the request in flight at the stop may come twice: %v", all)
}

func TestStatusShowsEveryToDoList(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := filepath.Join(t.TempDir(), "passage.db")
	ctx := context.Background()
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	defer db.Close()
	list, err := todolist.Open(ctx, db.DB, "pending-orders", todolist.WithListClock(clock))
	require.NoError(t, err)
	for i, due := range []time.Duration{-10 * time.Minute, -time.Minute, time.Hour} {
		require.NoError(t, list.Add(ctx, fmt.Sprintf("order-%d", i), start.Add(due)))
	}
	// A processor completes what was due a few minutes ago, in another process.
	proc, err := todolist.NewProcessor(list, func(context.Context, todolist.Item) error { return nil })
	require.NoError(t, err)
	_, err = proc.Process(ctx, start.Add(-5*time.Minute))
	require.NoError(t, err)

	r := run(t, clock, nil, "status", "--db", path, "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var report struct {
		Lists []struct {
			Name      string    `json:"name"`
			Pending   int       `json:"pending"`
			Due       int       `json:"due_now"`
			OldestDue time.Time `json:"oldest_due"`
			Lag       string    `json:"lag"`
			Completed int64     `json:"completed_total"`
		} `json:"todo_lists"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report), r.stdout)
	require.Len(t, report.Lists, 1)
	l := report.Lists[0]
	require.Equal(t, "pending-orders", l.Name)
	require.Equal(t, 2, l.Pending)
	require.Equal(t, 1, l.Due)
	require.Equal(t, int64(1), l.Completed)
	require.True(t, l.OldestDue.Equal(start.Add(-time.Minute)))
	require.Equal(t, "1m0s", l.Lag)

	human := run(t, clock, nil, "status", "--db", path)
	require.Regexp(t, `pending-orders\s+2\s+1\s+0\s+2026-11-21T11:59:30Z\s+1m0s\s+1\s+0`, human.stdout)
}

// status --json says where "behind" stops counting, and gives a list with
// nothing due a null lag rather than text.
func TestStatusJSONShowsTheCapOfBehindAndNullForNoLag(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute").code)
	r := run(t, clock, nil, "schedule", "add", "--db", db, "--name", "later", "--spec", "@every 1h", "--command", "c")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	clock.Advance(200_000 * time.Minute) // more minutes behind than the cap
	st := run(t, clock, nil, "status", "--db", db, "--json")
	require.Equal(t, cli.ExitOK, st.code, st.stderr)
	var report struct {
		BehindCap int `json:"behind_cap"`
		Units     []struct {
			Behind       int  `json:"behind"`
			BehindCapped bool `json:"behind_capped"`
		} `json:"units"`
		Lists []struct {
			Name string  `json:"name"`
			Due  int     `json:"due_now"`
			Lag  *string `json:"lag"`
		} `json:"todo_lists"`
	}
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &report), st.stdout)
	require.Equal(t, 100_000, report.BehindCap)
	require.Equal(t, 100_000, report.Units[0].Behind)
	require.True(t, report.Units[0].BehindCapped)
	require.Len(t, report.Lists, 1)
	require.Equal(t, 1, report.Lists[0].Due, "the hourly slot is due by now")
	require.NotNil(t, report.Lists[0].Lag)

	fresh := filepath.Join(t.TempDir(), "fresh.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "schedule", "add", "--db", fresh, "--name", "later", "--spec", "@every 1h", "--command", "c").code)
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", fresh, "--units", "minute").code)
	st = run(t, clock, nil, "status", "--db", fresh, "--json")
	require.Contains(t, st.stdout, `"lag": null`, "nothing due: null, not text")
	require.Contains(t, st.stdout, `"behind_capped": false`)
}
