package dashboard_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// syncBuffer is a log destination the handler and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// post sends form to u with header h and returns the response, its body read.
func post(t *testing.T, u string, form url.Values, h http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(body)
}

func sessionOf(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == "passage_admin" {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", res.Header)
	return nil
}

// withCookie is a header carrying c.
func withCookie(c *http.Cookie) http.Header { return http.Header{"Cookie": {c.Name + "=" + c.Value}} }

// Issue 27 point 4: any website could read the dashboard through a DNS
// name it pointed at the server (rebinding), since the Host header was
// never checked. Only IP addresses, localhost and the allowed names are
// answered; the others get 421 before anything is read.
func TestOnlyTheAllowedHostNamesAreAnswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAllowedHosts("dash.example.com", ".ops.example"))
	for host, want := range map[string]int{
		"":                          http.StatusOK, // the server's 127.0.0.1:port
		"localhost":                 http.StatusOK,
		"LOCALHOST.:8080":           http.StatusOK,
		"app.localhost":             http.StatusOK,
		"[::1]:9090":                http.StatusOK,
		"dash.example.com":          http.StatusOK,
		"dash.example.com:443":      http.StatusOK,
		"eu.ops.example":            http.StatusOK,
		"rebind.attacker.example":   http.StatusMisdirectedRequest,
		"localhost.attacker.test":   http.StatusMisdirectedRequest,
		"evildash.example.com":      http.StatusMisdirectedRequest,
		"ops.example":               http.StatusMisdirectedRequest,
		"dash.example.com.evil.com": http.StatusMisdirectedRequest,
	} {
		for _, path := range []string{"/", "/api/status", "/workflows/order-1"} {
			req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			require.NoError(t, err)
			if host != "" {
				req.Host = host
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			require.Equal(t, want, res.StatusCode, "Host %q %s: %s", host, path, body)
			if want != http.StatusOK {
				require.NotContains(t, string(body), "order-1", "nothing read for a foreign host")
			}
		}
	}
	_, err := dashboard.New(f.db.DB, dashboard.WithAllowedHosts("https://dash.example.com"))
	require.ErrorIs(t, err, dashboard.ErrInvalidOption)
}

// The same in a browser: a name that resolves to the server but is not
// allowed (what a rebinding attack gives another site) shows nothing of
// the dashboard; an allowed name shows it.
func TestBrowserARebindingNameReadsNothing(t *testing.T) {
	ctx := browser(t, chromedp.Flag("host-resolver-rules", "MAP rebind.attacker.example 127.0.0.1, MAP dash.example.com 127.0.0.1"))
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithRefresh(0), dashboard.WithAllowedHosts("dash.example.com"))
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://rebind.attacker.example:"+u.Port()+"/api/status")))
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.Contains(t, body, "does not answer for this host name")
	require.NotContains(t, body, "replica-a", "no status read through the rebinding name")

	units := text(t, ctx, "http://dash.example.com:"+u.Port()+"/", "#lease")
	require.Contains(t, units, "replica-a")
	shoot(t, ctx, "allowed-host")
}

// Issue 27 point 5: the session cookie was a fixed HMAC of the token:
// the same at every login, never expiring, still good after logout. Each
// login now starts a random session that expires and ends at logout.
func TestSessionsAreRandomExpireAndEndAtLogout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithSessionTTL(time.Hour))
	login := func() *http.Cookie {
		res, body := post(t, srv.URL+"/login", url.Values{"token": {testToken}, "back": {"/schedules"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
		return sessionOf(t, res)
	}
	pause := func(c *http.Cookie) int {
		res, _ := post(t, srv.URL+"/schedules/poll/pause", nil, withCookie(c))
		return res.StatusCode
	}
	a, b := login(), login()
	require.NotEqual(t, a.Value, b.Value, "each login has a session of its own")
	require.Equal(t, 3600, a.MaxAge, "the cookie expires with the session")
	require.True(t, a.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, a.SameSite)
	require.False(t, a.Secure, "plain HTTP, no WithSecureCookie")
	require.Equal(t, http.StatusSeeOther, pause(a))
	require.Equal(t, http.StatusSeeOther, pause(b))

	// Logging out ends the session on the server: its cookie, kept by
	// whoever copied it, no longer works; the other session still does.
	res, _ := post(t, srv.URL+"/logout", url.Values{"back": {"/"}}, withCookie(a))
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, http.StatusForbidden, pause(a), "a logged-out session is refused")
	require.Equal(t, http.StatusSeeOther, pause(b))

	// A session expires on the server too, whatever the browser keeps.
	f.clock.Advance(time.Hour)
	require.Equal(t, http.StatusForbidden, pause(b), "an expired session is refused")

	// Behind a proxy that ends TLS, the cookie is marked Secure.
	secure := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithSecureCookie(true))
	res, body := post(t, secure.URL+"/login", url.Values{"token": {testToken}}, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	require.True(t, sessionOf(t, res).Secure)
}

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
