package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

// watchedBuffer is a lockedBuffer that says when a text first appears in
// it, so a test waits for a line instead of sleeping.
type watchedBuffer struct {
	lockedBuffer
	text string
	once sync.Once
	seen chan struct{}
}

func newWatchedBuffer(text string) *watchedBuffer {
	return &watchedBuffer{text: text, seen: make(chan struct{})}
}

func (b *watchedBuffer) Write(p []byte) (int, error) {
	n, err := b.lockedBuffer.Write(p)
	if strings.Contains(b.String(), b.text) {
		b.once.Do(func() { close(b.seen) })
	}
	return n, err
}

// served is "ticker serve" in its own goroutine: cancel is the signal,
// done receives the exit code, base is the URL it serves on.
type served struct {
	base   string
	stderr *watchedBuffer
	cancel context.CancelFunc
	done   chan int
}

const servingLine = "serving the dashboard on "

// startServe starts "ticker serve args... --http 127.0.0.1:0" and returns
// once it said where it listens.
func startServe(t *testing.T, clock clockwork.Clock, env map[string]string, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{stderr: newWatchedBuffer(servingLine), cancel: cancel, done: make(chan int, 1)}
	var stdout lockedBuffer
	go func() {
		s.done <- cli.Main(ctx, append(append([]string{"serve"}, args...), "--http", "127.0.0.1:0"), cli.Env{
			Stdout: &stdout, Stderr: s.stderr, Clock: clock, Getenv: func(k string) string { return env[k] },
		})
	}()
	select {
	case <-s.stderr.seen:
	case code := <-s.done:
		t.Fatalf("ticker serve exited with %d before serving: %s", code, s.stderr.String())
	}
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	_, rest, _ := strings.Cut(s.stderr.String(), servingLine)
	s.base, _, _ = strings.Cut(rest, " ")
	require.True(t, strings.HasPrefix(s.base, "http://127.0.0.1:"), s.stderr.String())
	return s
}

// stop signals serve and returns its exit code, failing the test if it
// does not end.
func (s *served) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		s.done <- code // for the cleanup
		return code
	case <-time.After(guard):
		t.Fatal("ticker serve ignored the signal")
		return -1
	}
}

func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// tickerDB is a SQLite database with a ticker's cursors and a to-do list
// of three items: the two due have failed and are parked.
func tickerDB(t *testing.T, clock clockwork.Clock) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", path, "--units", "minute,hour").code)
	ctx := context.Background()
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	defer db.Close()
	list, err := todolist.Open(ctx, db.DB, "pending-orders", todolist.WithListClock(clock))
	require.NoError(t, err)
	for i, due := range []time.Duration{-10 * time.Minute, -time.Minute, time.Hour} {
		require.NoError(t, list.Add(ctx, fmt.Sprintf("order-%d", i), start.Add(due)))
	}
	proc, err := todolist.NewProcessor(list, func(context.Context, todolist.Item) error { return fmt.Errorf("card declined") },
		todolist.WithMaxAttempts(1))
	require.NoError(t, err)
	_, err = proc.Process(ctx, start)
	require.NoError(t, err)
	return path
}

func TestServeShowsTheDashboardAndTheStatusOfASQLiteDatabase(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := tickerDB(t, clock)
	s := startServe(t, clock, nil, "--db", path)
	require.Contains(t, s.stderr.String(), "(read-only)")

	code, page := httpGet(t, s.base+"/")
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, `id="readonly"`)
	require.Contains(t, page, "2026-11-21T12:00:00Z", "the minute cursor")
	code, page = httpGet(t, s.base+"/lists/pending-orders?parked=1")
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, "order-0")
	require.Contains(t, page, "card declined")
	require.NotContains(t, page, "Re-activate", "no actions without a token")

	code, api := httpGet(t, s.base+"/api/status")
	require.Equal(t, http.StatusOK, code, api)
	status := run(t, clock, nil, "status", "--db", path, "--json")
	require.Equal(t, cli.ExitOK, status.code, status.stderr)
	require.JSONEq(t, status.stdout, api, "/api/status is what status --json prints")
	var report struct {
		Lists []struct {
			Name    string `json:"name"`
			Pending int    `json:"pending"`
			Parked  int    `json:"parked"`
		} `json:"todo_lists"`
	}
	require.NoError(t, json.Unmarshal([]byte(api), &report))
	require.Len(t, report.Lists, 1)
	require.Equal(t, "pending-orders", report.Lists[0].Name)
	require.Equal(t, 1, report.Lists[0].Pending)
	require.Equal(t, 2, report.Lists[0].Parked)

	require.Equal(t, cli.ExitOK, s.stop(t), s.stderr.String())
}

func TestServeIsReadOnlyByDefault(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := tickerDB(t, clock)
	before := fileState(t, path)
	// The tables, read from a copy: a reader of the file itself would
	// leave -wal and -shm files behind.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	copied := filepath.Join(t.TempDir(), "copy.db")
	require.NoError(t, os.WriteFile(copied, raw, 0o600))
	tables := sqliteTables(t, copied)
	s := startServe(t, clock, nil, "--db", path)

	for _, action := range []struct{ path, form string }{
		{"/lists/pending-orders/reactivate", "id=order-0"},
		{"/schedules/nightly/pause", ""},
		{"/workflows/w-1/cancel", ""},
	} {
		for _, bearer := range []string{"", "Bearer " + strings.Repeat("x", 32)} {
			req, err := http.NewRequest(http.MethodPost, s.base+action.path, strings.NewReader(action.form))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if bearer != "" {
				req.Header.Set("Authorization", bearer)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s", action.path, body)
			require.Contains(t, string(body), "read-only")
		}
	}
	resp, err := http.PostForm(s.base+"/login", url.Values{"token": {strings.Repeat("x", 32)}})
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no login without a token")
	code, page := httpGet(t, s.base+"/lists/pending-orders")
	require.Equal(t, http.StatusOK, code, page)
	mainFile := func() string { return strings.SplitN(fileState(t, path), "\n", 2)[0] }
	require.Equal(t, strings.SplitN(before, "\n", 2)[0], mainFile(), "while serving, the file is only read (its -wal and -shm let serve see later writes)")

	require.Equal(t, cli.ExitOK, s.stop(t), s.stderr.String())
	require.Contains(t, s.stderr.String(), `msg="dashboard: refused" reason=read-only`, "refusals are logged (a line a minute per client)")
	require.Equal(t, before, fileState(t, path), "serve changed nothing on disk")
	require.Equal(t, tables, sqliteTables(t, path), "serve created no tables")

	// The parked items are still parked.
	parked := run(t, clock, nil, "status", "--db", path, "--json")
	require.Contains(t, parked.stdout, `"parked": 2`)
}

func TestServeRefusesABadDSNOrFlagWithExit2(t *testing.T) {
	t.Parallel()
	existing := filepath.Join(t.TempDir(), "passage.db")
	require.NoError(t, os.WriteFile(existing, nil, 0o600))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--db", "postgres://u@[::1/x", "--http", "127.0.0.1:0"}, "--db: not a PostgreSQL URL"},
		{[]string{"serve", "--db", "mysql://root@localhost/x", "--http", "127.0.0.1:0"}, `--db "mysql://root@localhost/x": unsupported scheme`},
		{[]string{"serve", "--db", existing + "?mode=%zz", "--http", "127.0.0.1:0"}, `--db "` + existing + `?mode=%zz"`},
		{[]string{"serve", "--db", "", "--http", "127.0.0.1:0"}, `--db "": empty`},
		{[]string{"serve", "--db", ":memory:", "--http", "127.0.0.1:0"}, `--db ":memory:"`},
		{[]string{"serve", "--db", existing, "--nonsense"}, "-nonsense"},
		{[]string{"serve", "--db", existing}, `--http is required: the address to serve the dashboard on, e.g. --http 127.0.0.1:9090`},
		{[]string{"serve", "--db", existing, "--http", ""}, `--http "": want host:port`},
		{[]string{"serve", "--db", existing, "--http", "9090"}, `--http "9090"`},
		{[]string{"serve", "--db", existing, "--http", "127.0.0.1:99999"}, `--http "127.0.0.1:99999": want host:port with a port from 0 to 65535`},
		{[]string{"serve", "--db", existing, "--http", "127.0.0.1:0", "--tz", "Mars/Olympus"}, `--tz "Mars/Olympus"`},
		{[]string{"serve", "--db", existing, "--http", "127.0.0.1:0", "--admin-token", "short"}, "--admin-token"},
	}
	for _, c := range cases {
		r := runGuarded(t, nil, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%q: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, "%q", c.args)
		require.Empty(t, r.stdout, "%q", c.args)
	}
}

// A signal ends serve gracefully: exit 0 well within its grace period,
// the port closed, the lag sampler stopped (goleak, in TestMain).
func TestServeStopsOnASignal(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := tickerDB(t, clock)
	s := startServe(t, clock, nil, "--db", path)
	// A kept-alive connection, idle when the signal comes.
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Get(s.base + "/api/status")
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.Equal(t, cli.ExitOK, s.stop(t), s.stderr.String())
	require.NotContains(t, s.stderr.String(), "abandoned")
	_, err = net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	require.Error(t, err, "the listener is closed")
	client.CloseIdleConnections()
}
