package cli_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/tick"
)

// stalledReceiver accepts every request and never answers it (until the
// test ends); arrived receives a value as each request comes in.
func stalledReceiver(t *testing.T) (url string, arrived <-chan struct{}) {
	t.Helper()
	in := make(chan struct{}, 100)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case in <- struct{}{}:
		default:
		}
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv.URL, in
}

// startBounded is startRun with the stop's bound set to bound.
func startBounded(t *testing.T, clock clockwork.Clock, bound time.Duration, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *tick.Ticker, 1)
	r := &background{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, cancel: cancel, done: make(chan int, 1)}
	env := cli.WithStopBound(cli.Env{
		Stdout: r.stdout, Stderr: r.stderr, Clock: clock,
		Started: func(tk *tick.Ticker) { started <- tk },
		// Past the bound and its margin, Main gives up: ExitAbandoned.
		Grace: bound + 5*time.Second,
	}, bound)
	go func() { r.done <- cli.Main(ctx, append([]string{"run"}, args...), env) }()
	select {
	case r.ticker = <-started:
	case code := <-r.done:
		t.Fatalf("ticker run exited with %d before starting: %s", code, r.stderr.String())
	}
	t.Cleanup(func() { r.stop() })
	return r
}

// Ctrl-C on "ticker run" while a receiver holds a request and never
// answers: the run stops within its bound, releases the lease, says how
// many records it left in the outbox (for the next holder), and exits 0 —
// not 1 with "context deadline exceeded".
func TestAStalledReceiverDoesNotHoldUpTheStop(t *testing.T) {
	t.Parallel()
	url, arrived := stalledReceiver(t)
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	r := startBounded(t, clock, 500*time.Millisecond, "--db", db, "--units", "minute", "--webhook", url, "--holder", "host-a")
	require.Contains(t, r.stderr.String(), "running as host-a: units minute in UTC, delivering to webhook "+url)
	require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
	<-arrived // 12:01 is on the wire, and will never be answered

	require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())
	stderr := r.stderr.String()
	require.Contains(t, stderr, "stopping: finishing the pass and the deliveries in flight, then delivering what is recorded (at most 500ms)\n")
	require.Contains(t, stderr, "stopped; cursors at minute 2026-11-21T12:01:00Z; lease released; delivered 0 records, 1 left in the outbox (delivery reached its time bound: the next run, or the next holder of the lease, delivers them)\n")
	require.NotContains(t, stderr, "deadline exceeded")
	require.Empty(t, leaseHolder(t, clock, db), "the lease is released")
}

// "run --until" with the same receiver: the backfill is recorded, the
// delivery stops at its bound, the lease is released and the line says
// what was left; exit 0 (the next run delivers the rest).
func TestUntilWithAStalledReceiverEndsAtItsBound(t *testing.T) {
	t.Parallel()
	url, _ := stalledReceiver(t)
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute").code)
	clock.Advance(10 * time.Minute)

	var stdout, stderr lockedBuffer
	env := cli.WithStopBound(cli.Env{Stdout: &stdout, Stderr: &stderr, Clock: clock, Grace: 5 * time.Second}, 500*time.Millisecond)
	code := cli.Main(context.Background(), []string{"run", "--db", db, "--units", "minute", "--webhook", url, "--until", "2026-11-21T12:05:00Z"}, env)
	require.Equal(t, cli.ExitOK, code, stderr.String())
	require.Contains(t, stderr.String(), "backfilled up to 2026-11-21T12:05:00Z: delivered 0 records, 5 left in the outbox (delivery reached its time bound: the next run, or the next holder of the lease, delivers them)\n")
	require.Empty(t, leaseHolder(t, clock, db))
}

// blockingWriter blocks its first write until release is closed, after
// telling the test it is blocked.
type blockingWriter struct {
	lockedBuffer
	once             sync.Once
	blocked, release chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.blocked); <-w.release })
	return w.lockedBuffer.Write(p)
}

// "ticker demo" interrupted mid-story prints one quiet line, not the
// error of the commit or the wait the signal cut short, and exits as
// interrupted (130, or 143 for SIGTERM, from main).
func TestAnInterruptedDemoSaysSoQuietly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &blockingWriter{blocked: make(chan struct{}), release: make(chan struct{})}
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() { done <- cli.Main(ctx, []string{"demo"}, cli.Env{Stdout: stdout, Stderr: &stderr}) }()
	<-stdout.blocked // the story has begun
	cancel()
	close(stdout.release)
	require.Equal(t, cli.ExitInterrupted, <-done, stderr.String())
	require.Equal(t, "ticker demo: stopped by a signal before the end of the story\n", stderr.String())
	require.NotEmpty(t, strings.TrimSpace(stdout.String()))
}
