package cli_test

import (
	"net/http"
	"os"
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
