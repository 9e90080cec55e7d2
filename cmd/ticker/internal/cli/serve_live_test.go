package cli_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// Issue 27 point 3: "ticker serve" started on a database no process had
// open read it immutable, and never saw a later write. Every write
// committed after the start shows on the next request, and once serve
// stops the file is as it was plus those writes: no -wal or -shm left.
func TestServeShowsWritesCommittedAfterItStarted(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := tickerDB(t, clock) // closed: a quiescent WAL file
	s := startServe(t, clock, nil, "--db", path)

	code, body := httpGet(t, s.base+"/api/schedules")
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "nightly-export")

	// Another connection, as another process would, writes twice: a
	// schedule is added, then paused.
	ok(t, run(t, clock, nil, "schedule", "add", "--db", path, "--name", "nightly-export", "--spec", "@every 5m", "--command", "export"))
	code, body = httpGet(t, s.base+"/api/schedules")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"name": "nightly-export"`, "the API shows the schedule added after serve started")
	require.Contains(t, body, `"paused": false`)
	ok(t, run(t, clock, nil, "schedule", "pause", "--db", path, "nightly-export"))
	code, page := httpGet(t, s.base+"/schedules")
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, `id="schedule-nightly-export"`, "the page shows it too")
	require.Contains(t, page, `class="tag paused"`, "and its pause")

	require.Equal(t, cli.ExitOK, s.stop(t), s.stderr.String())
	for _, left := range []string{path + "-wal", path + "-shm"} {
		_, err := os.Stat(left)
		require.ErrorIs(t, err, os.ErrNotExist, "serve removed %s, which its reads needed", left)
	}
}

// Issue 27 point 4: serve answers only the host names it was bound for:
// IP addresses and localhost, and the --allowed-host names (or
// $PASSAGE_DASHBOARD_HOSTS); bound beyond loopback, it warns that reading
// needs no token.
func TestServeAnswersItsHostNamesAndWarnsBeyondLoopback(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := tickerDB(t, clock)
	hostGet := func(base, host string) int {
		req, err := http.NewRequest(http.MethodGet, base+"/api/status", nil)
		require.NoError(t, err)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		return res.StatusCode
	}

	s := startServe(t, clock, map[string]string{"PASSAGE_DASHBOARD_HOSTS": "env.example"}, "--db", path, "--allowed-host", "dash.example.com")
	require.NotContains(t, s.stderr.String(), "warning:", "a loopback bind is not warned about")
	require.Equal(t, http.StatusOK, hostGet(s.base, "localhost"))
	require.Equal(t, http.StatusOK, hostGet(s.base, "dash.example.com:8443"))
	require.Equal(t, http.StatusOK, hostGet(s.base, "env.example"))
	require.Equal(t, http.StatusMisdirectedRequest, hostGet(s.base, "rebind.attacker.example"))

	// Bound to every address: the warning, and still no foreign names.
	ctx, cancel := context.WithCancel(context.Background())
	stderr := newWatchedBuffer(servingLine)
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"serve", "--db", path, "--http", "0.0.0.0:0"}, cli.Env{Stdout: io.Discard, Stderr: stderr, Clock: clock})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-stderr.seen:
	case code := <-done:
		t.Fatalf("serve exited with %d: %s", code, stderr.String())
	}
	require.Contains(t, stderr.String(), "is reachable from other machines and reading the dashboard needs no token", stderr.String())
	_, rest, _ := strings.Cut(stderr.String(), servingLine)
	listening, _, _ := strings.Cut(rest, " ")
	port := listening[strings.LastIndex(listening, ":")+1:]
	require.Equal(t, http.StatusMisdirectedRequest, hostGet("http://127.0.0.1:"+port, "rebind.attacker.example"))
	require.Equal(t, http.StatusOK, hostGet("http://127.0.0.1:"+port, "127.0.0.1:"+port))
}
