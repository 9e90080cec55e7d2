package dashboard_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// links are the href, src and action attributes of a page.
var links = regexp.MustCompile(`(?:href|src|action)="([^"]*)"`)

// mountUnderOps serves f's dashboard under /ops/ of a server whose other
// paths answer 418, so a link that escapes the prefix shows.
func mountUnderOps(t *testing.T, f *fixture, opts ...dashboard.Option) *httptest.Server {
	t.Helper()
	d, err := dashboard.New(f.db.DB, append([]dashboard.Option{dashboard.WithClock(f.clock), dashboard.WithScheduler(f.scheduler),
		dashboard.WithEngine(f.engine), dashboard.WithBasePath("/ops/"),
		dashboard.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ops/", d)
	mux.Handle("/ops", d)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not the dashboard: "+r.URL.Path, http.StatusTeapot)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestTheDashboardWorksUnderABasePath(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := mountUnderOps(t, f, dashboard.WithAdminToken(testToken))
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, form url.Values) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(body)
	}

	res, _ := do(http.MethodGet, "/ops", nil)
	require.Equal(t, http.StatusMovedPermanently, res.StatusCode)
	require.Equal(t, "/ops/", res.Header.Get("Location"))

	// Logged in, so the action forms show too.
	res, _ = do(http.MethodPost, "/ops/login", url.Values{"token": {testToken}, "back": {"/lists"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/ops/lists", res.Header.Get("Location"))
	cookies := res.Cookies()
	require.Len(t, cookies, 1)
	require.Equal(t, "/ops/", cookies[0].Path, "the session is the mounted dashboard's alone")

	// Every page reachable from the start page, and every link, form and
	// asset on them, stays under /ops/ and answers.
	seen := map[string]bool{}
	queue := []string{"/ops/"}
	forms := 0
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		if seen[page] {
			continue
		}
		seen[page] = true
		res, body := do(http.MethodGet, page, nil)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", page, body)
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			continue
		}
		for _, m := range links.FindAllStringSubmatch(body, -1) {
			link := strings.ReplaceAll(m[1], "&amp;", "&")
			require.True(t, strings.HasPrefix(link, "/ops/"), "%s links to %q, outside /ops/", page, link)
			if strings.Contains(m[0], "action=") {
				forms++
				continue // forms are posted below
			}
			queue = append(queue, link)
		}
	}
	for _, want := range []string{"/ops/lists/pending-orders", "/ops/schedules", "/ops/workflows/order-1", "/ops/assets/style.css", "/ops/api/status"} {
		require.True(t, seen[want], "%s was not reached: %v", want, seen)
	}
	require.Positive(t, forms, "the action forms were seen")

	// An action posts to its mounted path and comes back under it.
	res, body := do(http.MethodPost, "/ops/lists/pending-orders/reactivate", url.Values{"id": {"order-broken"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/ops/lists/pending-orders?done="), res.Header.Get("Location"))
	it, err := f.orders.Get(t.Context(), "order-broken")
	require.NoError(t, err)
	require.False(t, it.Parked, "re-activated")

	res, _ = do(http.MethodPost, "/ops/logout", url.Values{"back": {"/schedules"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/ops/schedules", res.Header.Get("Location"))
	// A back that leaves the site goes to the dashboard's start.
	res, _ = do(http.MethodPost, "/ops/logout", url.Values{"back": {"//evil.example/x"}})
	require.Equal(t, "/ops/", res.Header.Get("Location"))
}

func TestWithBasePathRejectsWhatIsNotAPath(t *testing.T) {
	t.Parallel()
	db := newSQLite(t)
	for _, p := range []string{"ops", "/ops?x=1", "/ops#top", "//evil.example", "https://x/ops"} {
		_, err := dashboard.New(db.DB, dashboard.WithBasePath(p))
		require.ErrorIs(t, err, dashboard.ErrInvalidOption, p)
		require.ErrorContains(t, err, p)
	}
	for _, p := range []string{"", "/", "/ops", "/ops/", "/a/b"} {
		_, err := dashboard.New(db.DB, dashboard.WithBasePath(p))
		require.NoError(t, err, p)
	}
}
