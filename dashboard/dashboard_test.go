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
	"time"

	"github.com/chromedp/chromedp"
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

// The lag history is sampled on Start's timer alone: page views used to
// add samples, and 30 s of views replaced two hours of history.
func TestPageViewsDoNotSampleTheLag(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithLagSampling(time.Minute, 10))
	for range 30 {
		code, _ := getPage(t, srv.URL+"/")
		require.Equal(t, http.StatusOK, code)
	}
	var lag []dashboard.LagSample
	require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/lag", &lag))
	require.Empty(t, lag, "no Start, no samples, however many views")
}

func TestBrowserPagesShowTheirData(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithRefresh(0))

	units := text(t, ctx, srv.URL+"/", "#units")
	require.Contains(t, units, "minute")
	require.Contains(t, hovered(t, ctx, "#units"), "2026-11-20T09:27:00Z") // the minute cursor, on hover
	require.Contains(t, units, "hour")
	lease := text(t, ctx, srv.URL+"/", "#lease")
	require.Contains(t, lease, "replica-a")
	require.Contains(t, lease, "term 3")
	shoot(t, ctx, "tickers")

	lists := text(t, ctx, srv.URL+"/lists", "#lists")
	require.Contains(t, lists, "pending-orders")
	require.Contains(t, lists, "passage-schedules")
	require.Contains(t, lists, "passage-workflows")
	shoot(t, ctx, "lists")

	stats := text(t, ctx, srv.URL+"/lists/pending-orders", "#stats")
	require.Contains(t, stats, "Pending\n40")
	require.Contains(t, stats, "Parked\n1")
	items := text(t, ctx, srv.URL+"/lists/pending-orders", "#items")
	require.Contains(t, items, "order-000")
	require.NotContains(t, items, "order-broken")
	shoot(t, ctx, "list")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#show-parked")), chromedp.WaitVisible(chromedp.CSS("td.error"))))
	parked := text(t, ctx, srv.URL+"/lists/pending-orders?parked=1", "#items")
	require.Contains(t, parked, "order-broken")
	require.Contains(t, parked, "payment provider said 502 Bad Gateway")
	shoot(t, ctx, "list-parked")

	weekly := text(t, ctx, srv.URL+"/schedules", "#schedule-weekly-report")
	require.Contains(t, hovered(t, ctx, "#schedule-weekly-report"), "2026-11-20T12:00:00+01:00") // noon in Warsaw, in Warsaw, on hover
	require.Contains(t, weekly, "Europe/Warsaw")
	require.Contains(t, weekly, f.runID)
	require.Contains(t, weekly, "triggered")
	shoot(t, ctx, "schedules")

	instances := text(t, ctx, srv.URL+"/workflows", "#instances")
	require.Contains(t, instances, "order-1")
	require.Contains(t, instances, "order-2")
	states := text(t, ctx, srv.URL+"/workflows", "#states")
	require.Contains(t, states, "running 1")
	require.Contains(t, states, "completed 1")
	shoot(t, ctx, "workflows")

	timeline := text(t, ctx, srv.URL+"/workflows/order-1", "#timeline")
	require.Contains(t, timeline, `step reserve stock completed (attempt 1): "res-order-1"`)
	require.Contains(t, timeline, `awaiting signal paid`)
	shoot(t, ctx, "workflow")

	// Read-only: no action is offered.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/schedules"), chromedp.WaitVisible(chromedp.CSS("#readonly"))))
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("button.pause, button.trigger, #signal").length`))
	require.NoError(t, err)
	require.Zero(t, n)
}
