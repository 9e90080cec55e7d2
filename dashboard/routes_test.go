package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// Unknown paths, /favicon.ico among them, are 404, not 405 with
// Allow: POST.
func TestUnknownPathsAreNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t)
	for _, p := range []string{"/favicon.ico", "/nope", "/lists/x/y/z", "/api/nope"} {
		res, err := http.Get(srv.URL + p)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.Equal(t, http.StatusNotFound, res.StatusCode, "%s: %s", p, body)
		require.Empty(t, res.Header.Get("Allow"), p)
	}
}

// newEvilSite serves, on another origin, a page with a form that posts
// to target.
func newEvilSite(t *testing.T, target string) string {
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id="forge" method="post" action="%s"><button>win a prize</button></form>`, target)
	}))
	t.Cleanup(evil.Close)
	return evil.URL + "/"
}

// A page on another origin that posts a form to the dashboard, as a
// forger would: the browser's own request, cookies and all, is refused.
func TestBrowserCrossSiteFormIsRefused(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithRefresh(0))
	login(t, ctx, srv.URL+"/schedules", testToken)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#logout"))))

	evil := newEvilSite(t, srv.URL+"/schedules/poll/pause")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(evil), chromedp.WaitVisible(chromedp.CSS("#forge")),
		chromedp.Submit(chromedp.CSS("#forge"))))
	until(t, ctx, `location.href.startsWith("`+srv.URL+`/") && document.readyState === "complete"`)
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.False(t, schedules(t, f)["poll"], "a cross-site form paused poll")
	require.NotContains(t, body, "paused poll")
}
