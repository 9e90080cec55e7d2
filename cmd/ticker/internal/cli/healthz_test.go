package cli_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"strconv"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

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
	// Healthy means nothing pending is older than the limit, not that
	// nothing is pending: the relay may still be sending the later
	// minutes. Wait for the receiver to have them all.
	var want []string
	for i := range minutes + 1 { // 12:01 … 12:08 at least
		want = append(want, "minute/"+timefmt.Format(start.Truncate(time.Minute).Add(time.Duration(i+1)*time.Minute)))
	}
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	require.Eventually(t, func() bool { return len(taken()) >= len(want) }, 10*time.Second, 5*time.Millisecond, "every minute delivered")
	require.Equal(t, want, taken(), "each minute once, in order, the refused one first")
}

// A PostgreSQL session left idle in a transaction that holds an xid
// holds every outbox relay back, on the whole server: /healthz of "ticker
// run" and of "ticker serve" answer 503 naming it (pid, application,
// state) once it is older than --horizon-limit, each process logs it
// once however often it is checked, /metrics exports its age, and all of
// it clears once the transaction ends. Other tests' sessions on the
// shared server may hold the horizon too, so the test waits for its own
// to be named, and for none to be left.
func TestHealthzNamesATransactionHoldingTheHorizon(t *testing.T) {
	t.Parallel()
	dsn, ok := databases(t)["postgres"]
	if !ok {
		t.Skip("PASSAGE_TEST_POSTGRES is not set")
	}
	clock := clockwork.NewFakeClockAt(start)
	r := startRun(t, clock, "--db", dsn, "--units", "minute", "--http", "127.0.0.1:0", "--horizon-limit", "1s")
	defer func() { require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String()) }()
	bases := map[string]string{"run": serverURL(t, r), "serve": startServe(t, clock, nil, "--db", dsn, "--horizon-limit", "1s").base}
	age := func() float64 {
		return value(t, scrape(t, bases["run"]), "passage_postgres_horizon_age_seconds", nil)
	}

	holder := sqldbtest.HoldHorizon(t)
	for command, base := range bases {
		var body string
		require.Eventually(t, func() bool {
			var code int
			code, body = httpGet(t, base+"/healthz")
			return code == http.StatusServiceUnavailable && strings.Contains(body, holder.Named())
		}, 10*time.Second, 10*time.Millisecond, "%s names %s: %s", command, holder.Named(), body)
		require.Contains(t, body, "postgres: ")
		require.Contains(t, body, "longer than 1s")
		require.Contains(t, body, "every outbox relay back")
	}
	require.GreaterOrEqual(t, age(), 1.0, "the holder's age, past the second it waited")
	// Checked again and again (/healthz, /metrics, every second): named
	// once in the log.
	logged := fmt.Sprintf("pid=%d application=%s state=\"idle in transaction\"", holder.PID, holder.Application)
	require.Eventually(t, func() bool { return strings.Contains(r.stderr.String(), logged) }, 10*time.Second, 10*time.Millisecond, r.stderr.String())
	for range 3 {
		httpGet(t, bases["run"]+"/healthz")
	}
	require.Equal(t, 1, strings.Count(r.stderr.String(), logged), r.stderr.String())
	require.Contains(t, r.stderr.String(), "a PostgreSQL transaction holds every outbox relay back")

	require.NoError(t, holder.End())
	for command, base := range bases {
		var body string
		require.Eventually(t, func() bool {
			var code int
			code, body = httpGet(t, base+"/healthz")
			return code == http.StatusOK
		}, 10*time.Second, 10*time.Millisecond, "%s healthy once the transaction ended: %s", command, body)
	}
	require.Eventually(t, func() bool { return age() == 0 }, 10*time.Second, 10*time.Millisecond, "no holder left")
}

// --horizon-limit out of its bounds, or given where nothing keeps running
// to report a holder (--once, --until), is a flag error naming it (exit 2),
// and nothing is opened.
func TestHorizonLimitOutOfBoundsOrIgnoredIsAFlagError(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--db", db, "--horizon-limit", "500ms"}, "--horizon-limit 500ms: must be between 1s and 24h0m0s, or 0 to never report a transaction holding delivery back"},
		{[]string{"run", "--db", db, "--horizon-limit", "25h"}, "--horizon-limit 25h0m0s: must be between 1s and 24h0m0s"},
		{[]string{"run", "--db", db, "--horizon-limit", "-1s"}, "--horizon-limit -1s: must be between"},
		{[]string{"run", "--once", "--db", db, "--horizon-limit", "1m"}, `--horizon-limit: names a transaction holding delivery back while "ticker run" keeps running, not with --once or --until`},
		{[]string{"run", "--db", db, "--until", "2026-11-21T11:00:00Z", "--horizon-limit", "1m"}, "--horizon-limit: names a transaction holding delivery back"},
		{[]string{"serve", "--db", db, "--http", "127.0.0.1:0", "--horizon-limit", "10ms"}, "--horizon-limit 10ms: must be between 1s and 24h0m0s"},
	} {
		r := runGuarded(t, clock, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
	}
	require.NoFileExists(t, db, "nothing opened")
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
