package dashboard_test

import (
	"context"
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

func TestBrowserPagesRefreshThemselves(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithRefresh(time.Second))
	require.Equal(t, "40", text(t, ctx, srv.URL+"/lists/pending-orders", "#pending"))
	require.NoError(t, f.orders.Add(context.Background(), "order-new", start.Add(time.Hour)))
	// The page reloads itself: wait for the new count, no reload asked.
	until(t, ctx, `document.readyState === "complete" && document.querySelector("#pending").textContent === "41"`)
}

// Issue 33 point 5: a filtered page never reloaded itself, its search
// box filled from the URL counting as something typed. It reloads as
// the others do.
func TestBrowserAFilteredPageRefreshesItself(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithRefresh(time.Second))
	cell := `document.querySelector('[id="list-pending-orders"] td.num')`
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/lists?q=pending&sort=pending"), chromedp.WaitVisible(chromedp.CSS("#lists"))))
	filled, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#filter input[name=q]').value`))
	require.NoError(t, err)
	require.Equal(t, "pending", filled)
	until(t, ctx, cell+`.textContent === "40"`)
	require.NoError(t, f.orders.Add(context.Background(), "order-new", start.Add(time.Hour)))
	// The page reloads itself: wait for the new count, no reload asked.
	until(t, ctx, `document.readyState === "complete" && `+cell+` !== null && `+cell+`.textContent === "41"`)
}

// Trigger and cancel ask first: their buttons open a page that asks (the
// pages allow no inline script, so no confirm() dialog), and only its own
// button posts. Going back from it does nothing.
func TestBrowserTriggerAndCancelAskFirst(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithRefresh(0))
	login(t, ctx, srv.URL+"/schedules", testToken)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#logout"))))
	runs := func() string {
		_, page := getPage(t, srv.URL+"/api/schedules/weekly-report/runs")
		return page
	}
	before := runs()

	// Asked, not answered: nothing triggered.
	confirmFirst(t, ctx, chromedp.Click(chromedp.CSS(`#schedule-weekly-report button.trigger`)))
	question, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#question")))
	require.NoError(t, err)
	require.Contains(t, question, "weekly-report")
	require.Len(t, f.triggered, 1, "the trigger button triggered without asking")
	require.Equal(t, before, runs())
	shoot(t, ctx, "confirm-trigger")
	_, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#back")))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#schedule-weekly-report"))))
	require.Len(t, f.triggered, 1, "going back triggered")
	require.Equal(t, before, runs())
	// Answered: triggered once.
	confirmFirst(t, ctx, chromedp.Click(chromedp.CSS(`#schedule-weekly-report button.trigger`)))
	submit(t, ctx, chromedp.Click(chromedp.CSS(`#confirm button`)))
	require.Len(t, f.triggered, 2)

	// The same for cancelling a workflow instance.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/workflows/order-1"), chromedp.WaitVisible(chromedp.CSS("#cancel"))))
	confirmFirst(t, ctx, chromedp.Click(chromedp.CSS(`#cancel button`)))
	require.NotContains(t, text(t, ctx, srv.URL+"/workflows/order-1", "#timeline"), "cancel requested", "the cancel button cancelled without asking")
	confirmFirst(t, ctx, chromedp.Click(chromedp.CSS(`#cancel button`)))
	_, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#back")))
	require.NoError(t, err)
	require.NotContains(t, text(t, ctx, srv.URL+"/workflows/order-1", "#timeline"), "cancel requested", "going back cancelled")
	confirmFirst(t, ctx, chromedp.Click(chromedp.CSS(`#cancel button`)))
	submit(t, ctx, chromedp.Click(chromedp.CSS(`#confirm button`)))
	require.Contains(t, text(t, ctx, srv.URL+"/workflows/order-1", "#timeline"), "cancel requested")

	// A finished instance or an unknown schedule is not asked about.
	code, _ := getPage(t, srv.URL+"/workflows/order-2/cancel")
	require.Equal(t, http.StatusConflict, code)
	code, _ = getPage(t, srv.URL+"/schedules/nope/trigger")
	require.Equal(t, http.StatusNotFound, code)
}

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
