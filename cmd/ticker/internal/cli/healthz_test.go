package cli_test

import (
	"context"
	"io"
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
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
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
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "minute/2026-11-21T12:01:00Z", got[0], "in order, after the refusals")
	require.Len(t, got, minutes+1)
}
