package cli_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
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
	require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())
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
