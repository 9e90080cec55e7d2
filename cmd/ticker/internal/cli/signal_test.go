package cli_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
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
