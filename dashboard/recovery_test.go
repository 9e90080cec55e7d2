package dashboard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// Issue 27 point 7: with the database down a page was a bare text 500, no
// navigation, so the browser stayed on the error. The error keeps the page
// shell and says what happened. Issue 33 point 2: it no longer shows the
// database's words (the log has them, under the reference the page
// gives), nor reloads itself every refresh period (each reload logged the
// failure again): reloading it by hand brings the page back with the
// database.
func TestBrowserAFailedPageKeepsItsShellAndComesBackOnReload(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	log := &syncBuffer{}
	srv := f.serve(t, dashboard.WithRefresh(time.Second), dashboard.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	bg := context.Background()

	// A column of the ticker's table renamed stands for a database that
	// fails every read of the page.
	_, err := f.db.ExecContext(bg, `ALTER TABLE tick_cursors RENAME COLUMN boundary TO boundary_away`)
	require.NoError(t, err)
	code, _ := getPage(t, srv.URL+"/")
	require.Equal(t, http.StatusInternalServerError, code)
	msg := text(t, ctx, srv.URL+"/", "#error")
	require.NotContains(t, msg, "boundary", "the page shows the database's words")
	ref := regexp.MustCompile(`reference ([0-9a-f]{8})`).FindStringSubmatch(msg)
	require.NotNil(t, ref, msg)
	require.Regexp(t, `reference=`+ref[1]+`.*boundary`, log.String(), "the log has the detail under the reference")
	nav, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("nav")))
	require.NoError(t, err)
	require.Contains(t, nav, "Schedules", "the error keeps the navigation")
	retry, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#retry")))
	require.NoError(t, err)
	require.Contains(t, retry, "Reload the page to try again")
	refresh, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.refresh`))
	require.NoError(t, err)
	require.Equal(t, "0", refresh, "the failed page reloads itself")
	shoot(t, ctx, "database-down")

	_, err = f.db.ExecContext(bg, `ALTER TABLE tick_cursors RENAME COLUMN boundary_away TO boundary`)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#units"))))
	require.Contains(t, hovered(t, ctx, "#units"), "2026-11-20T09:27:00Z")
}

// Pause and resume say "paused" and "resumed" (they said "pausd" and
// "resumd"); a trigger says where its run went when told.
func TestActionMessagesReadRight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithTriggerNote(", recorded in the outbox"))
	bearer := http.Header{"Authorization": {"Bearer " + testToken}}
	for verb, want := range map[string]string{"pause": `"paused poll"`, "resume": `"resumed poll"`, "trigger": `, recorded in the outbox"`} {
		res, body := post(t, srv.URL+"/schedules/poll/"+verb, nil, bearer)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		require.Contains(t, body, want)
	}
}

// ?done= showed any text as the green banner of a done action (content
// spoofing); it now shows only the messages the server wrote.
func TestOnlyTheServersDoneMessagesShow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken))
	_, page := getPage(t, srv.URL+"/schedules?done="+url.QueryEscape("Your token expired: send it to evil.example"))
	require.NotContains(t, page, "Your token expired: send", "the made-up text is not shown")
	require.NotContains(t, page, `id="done"`)

	res, _ := post(t, srv.URL+"/login", url.Values{"token": {testToken}}, nil)
	cookie := sessionOf(t, res)
	res, _ = post(t, srv.URL+"/schedules/poll/pause", nil, withCookie(cookie))
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = getPage(t, srv.URL+res.Header.Get("Location"))
	require.Contains(t, page, `<p class="done" id="done">paused poll</p>`)
	// The same message with another text is not shown either.
	forged := strings.Replace(res.Header.Get("Location"), "paused+poll", "paused+everything", 1)
	_, page = getPage(t, srv.URL+forged)
	require.NotContains(t, page, `id="done"`)
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

func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(body)
}
