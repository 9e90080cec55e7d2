package dashboard_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// Issue 27 point 6: logins and bearer tokens could be tried without
// limit, and each refusal wrote a WARN line. A client gets a few wrong
// attempts, then one every few seconds, the rest answered 429 unchecked
// (the right token too); the log has a line a minute per client, with the
// number of refusals it did not log.
func TestGuessingTheTokenIsLimitedAndLoggedInSummary(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	var log syncBuffer
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))

	codes := map[int]int{}
	for i := range 500 {
		res, _ := post(t, srv.URL+"/login", url.Values{"token": {"guess-" + strings.Repeat("x", i%7) + "-0123456789"}}, nil)
		codes[res.StatusCode]++
		res, _ = post(t, srv.URL+"/schedules/poll/pause", nil, http.Header{"Authorization": {"Bearer guess-0123456789abcdef"}})
		codes[res.StatusCode]++
	}
	require.Equal(t, 10, codes[http.StatusForbidden], "ten wrong attempts, logins and bearer tokens together: %v", codes)
	require.Equal(t, 990, codes[http.StatusTooManyRequests], "%v", codes)

	// Out of attempts, the right token is not even checked...
	res, _ := post(t, srv.URL+"/login", url.Values{"token": {testToken}}, nil)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	res, _ = post(t, srv.URL+"/schedules/poll/pause", nil, http.Header{"Authorization": {"Bearer " + testToken}})
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	// ...until an attempt has come back.
	f.clock.Advance(6 * time.Second)
	res, _ = post(t, srv.URL+"/schedules/poll/pause", nil, http.Header{"Authorization": {"Bearer " + testToken}})
	require.Equal(t, http.StatusOK, res.StatusCode)

	lines := strings.Count(log.String(), "dashboard: refused")
	require.Equal(t, 1, lines, "one line for the client's refusals in a minute:\n%s", log.String())
	f.clock.Advance(time.Minute)
	res, _ = post(t, srv.URL+"/login", url.Values{"token": {"still-guessing-0123"}}, nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, 2, strings.Count(log.String(), "dashboard: refused"))
	require.Contains(t, log.String(), "unlogged_refusals=1001", "the second line counts what the first minute did not log")
}

// A client is an address: another one still has its attempts.
func TestAttemptsAreCountedPerClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	d, err := dashboard.New(f.db.DB, dashboard.WithClock(f.clock), dashboard.WithAdminToken(testToken),
		dashboard.WithScheduler(f.scheduler), dashboard.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	try := func(remote, token string) int {
		req := httptest.NewRequest(http.MethodPost, "/schedules/poll/pause", nil)
		req.RemoteAddr, req.Host = remote, "127.0.0.1:9090"
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		return w.Code
	}
	for range 20 {
		try("203.0.113.7:4000", "wrong-wrong-wrong-wrong")
		try("[2001:db8:1:2::7]:4000", "wrong-wrong-wrong-wrong")
	}
	require.Equal(t, http.StatusTooManyRequests, try("203.0.113.7:4001", testToken))
	require.Equal(t, http.StatusTooManyRequests, try("[2001:db8:1:2::99]:4000", testToken), "an IPv6 client is its /64")
	require.Equal(t, http.StatusOK, try("198.51.100.1:4000", testToken), "another address has its attempts")
}
