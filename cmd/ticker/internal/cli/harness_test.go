package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/tick"
)

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

// result is what a command line left: its exit code and its output.
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

// ok requires r to have succeeded and returns its stdout.
func ok(t *testing.T, r result) string {
	t.Helper()
	require.Equal(t, cli.ExitOK, r.code, "stderr: %s", r.stderr)
	return r.stdout
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

// boundaries gives the records' boundaries as UTC clock times, "15:04".
func boundaries(recs []sink.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Boundary.UTC().Format("15:04"))
	}
	return out
}

// background is "ticker run" in its own goroutine, as a process a signal
// will stop: cancel is SIGINT/SIGTERM, done receives the exit code, which
// stop reads once and keeps.
type background struct {
	ticker         *tick.Ticker
	stdout, stderr *lockedBuffer
	cancel         context.CancelFunc
	done           chan int

	stopOnce sync.Once
	code     int
}

// startRun starts "ticker run args..." on clock and returns once its ticker
// has started. The run is stopped when the test ends, if the test did not
// stop it: a test that failed before its stop left the run writing to its
// PostgreSQL schema while the cleanup dropped it (registered before, so
// run after this one).
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
	t.Cleanup(func() { r.stop() })
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

// stop signals the run and returns its exit code; stopping it again
// returns the same code.
func (r *background) stop() int {
	r.stopOnce.Do(func() {
		r.cancel()
		r.code = <-r.done
	})
	return r.code
}
