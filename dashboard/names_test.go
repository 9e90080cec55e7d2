package dashboard_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/todolist"
)

// dotNames stores the schedules ".", ".." and "trigger", the to-do list
// "." and the workflow instance ".": each made through its library under
// another name, then renamed in the database, as a database written
// before the libraries refused "." and ".." holds them.
func dotNames(t testing.TB, f *fixture) {
	t.Helper()
	ctx := context.Background()
	rename := func(query string, args ...any) {
		t.Helper()
		_, err := f.db.ExecContext(ctx, f.db.Rebind(query), args...)
		require.NoError(t, err, query)
	}
	every, err := schedule.Every(8*time.Hour, start.Add(-24*time.Hour))
	require.NoError(t, err)
	_, err = f.scheduler.Sync(ctx,
		schedule.Definition{Name: "dot-1", Spec: every, Command: "one dot"},
		schedule.Definition{Name: "dot-2", Spec: every, Command: "two dots"},
		schedule.Definition{Name: "trigger", Spec: every, Command: "a name like an action"})
	require.NoError(t, err)
	for from, to := range map[string]string{"dot-1": ".", "dot-2": ".."} {
		rename(`UPDATE schedule_schedules SET name = ? WHERE name = ?`, to, from)
		rename(`UPDATE todolist_items SET id = ? WHERE list = 'passage-schedules' AND id = ?`, to, from)
	}

	l, err := todolist.Open(ctx, f.db.DB, "dot-list", todolist.WithListClock(f.clock))
	require.NoError(t, err)
	require.NoError(t, l.Add(ctx, "the-dot-item", start.Add(time.Hour)))
	rename(`UPDATE todolist_items SET list = ? WHERE list = ?`, ".", "dot-list")

	_, err = orchestration.Start(ctx, f.engine, "order", "dot-wf", "dot-wf")
	require.NoError(t, err)
	rename(`UPDATE eventstore_events SET stream = ? WHERE stream = ?`, "workflow/.", "workflow/dot-wf")
	rename(`UPDATE todolist_items SET id = ? WHERE id = ?`, ".", "dot-wf")
}

// linkIn matches the links and form actions of a page.
var linkIn = regexp.MustCompile(`(?:href|action)="([^"]*)"`)

// requireStableLinks fails when a link or form of the page at u holds a
// path a browser would rewrite: a "." or ".." segment, encoded or not,
// which it drops before asking (the WHATWG URL standard's single- and
// double-dot segments).
func requireStableLinks(t testing.TB, u, page string) {
	t.Helper()
	for _, m := range linkIn.FindAllStringSubmatch(page, -1) {
		ref := html.UnescapeString(m[1])
		path, _, _ := strings.Cut(ref, "?")
		for _, seg := range strings.Split(path, "/") {
			switch strings.ToLower(seg) {
			case ".", "..", "%2e", "%2e%2e", ".%2e", "%2e.":
				t.Fatalf("%s links to %s, which a browser rewrites", u, ref)
			}
		}
	}
}

// heading is a page's <h1> text.
func heading(t testing.TB, page string) string {
	t.Helper()
	m := regexp.MustCompile(`<h1><bdi>(.*?)</bdi></h1>`).FindStringSubmatch(page)
	require.NotNil(t, m, "no <h1> in %.300s", page)
	return html.UnescapeString(m[1])
}

// Issue 33 point 4: a list, schedule or instance named "." or ".." could
// not be reached, and worse, its links reached another item: a browser
// rewrites /schedules/./trigger to /schedules/trigger (even as %2e), so
// "Trigger now…" on schedule "." opened the page of the schedule named
// "trigger". Now no link of any page holds a segment a browser rewrites:
// those names go through routes taking them in the query, which show and
// act on the item named, and nothing else. Both backends.
func TestNamesABrowserRewritesAreLinkedThroughTheQuery(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := b.Open(t)
			f := newFixture(t, db)
			dotNames(t, f)
			srv := f.serve(t, dashboard.WithAdminToken(testToken))
			res, _ := post(t, srv.URL+"/login", url.Values{"token": {testToken}}, nil)
			session := withCookie(sessionOf(t, res))

			// Every page an operator reaches them from, as an admin (with
			// the action buttons): no link a browser would rewrite.
			pages := []string{"/schedules", "/lists", "/workflows", "/schedule?name=.", "/schedule?name=..",
				"/list?name=.", "/list?name=.&parked=1", "/workflow?id=.", "/schedule/trigger?name=.", "/workflow/cancel?id=."}
			for _, p := range pages {
				req, err := http.NewRequest(http.MethodGet, srv.URL+p, nil)
				require.NoError(t, err)
				req.Header = session.Clone()
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				b, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				require.NoError(t, res.Body.Close())
				require.Equal(t, http.StatusOK, res.StatusCode, "%s: %.300s", p, b)
				requireStableLinks(t, p, string(b))
			}

			// The pages and the API through the query name the item asked.
			for p, want := range map[string]string{
				"/schedule?name=.": ".", "/schedule?name=..": "..", "/schedules/trigger": "trigger",
				"/list?name=.": ".", "/workflow?id=.": ".",
			} {
				code, page := getPage(t, srv.URL+p)
				require.Equal(t, http.StatusOK, code, "%s: %.300s", p, page)
				require.Equal(t, want, heading(t, page), p)
			}
			_, page := getPage(t, srv.URL+"/schedules")
			require.Contains(t, page, `href="/schedule?name=."`)
			require.Contains(t, page, `href="/schedule?name=.."`)
			var list struct{ Stats struct{ Name string } }
			require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/list?name=.", &list))
			require.Equal(t, ".", list.Stats.Name)
			var items struct{ Items []struct{ ID string } }
			require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/list/items?name=.", &items))
			require.Len(t, items.Items, 1)
			require.Equal(t, "the-dot-item", items.Items[0].ID)
			var wf struct{ Instance struct{ ID string } }
			require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/workflow?id=.", &wf))
			require.Equal(t, ".", wf.Instance.ID)
			var runs []any
			require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/schedule/runs?name=..", &runs))

			// "Trigger now…" on "." asks about ".", and its button
			// triggers "." and nothing else.
			_, page = getPage(t, srv.URL+"/schedule/trigger?name=.")
			require.Contains(t, page, `<bdi>.</bdi>?`, "the question names the schedule")
			before := len(f.triggered)
			res, body := post(t, srv.URL+"/schedule/trigger?name=.", nil, session)
			require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
			require.Len(t, f.triggered, before+1)
			require.Equal(t, ".", f.triggered[before].Schedule)
			res, body = post(t, srv.URL+"/schedule/pause?name=..", nil, session)
			require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
			paused := schedules(t, f)
			require.True(t, paused[".."])
			require.False(t, paused["."])
			require.False(t, paused["trigger"])
			// The action returns to the schedule's page through the query.
			require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/schedules?done="), res.Header.Get("Location"))
			res, body = post(t, srv.URL+"/workflow/signal?id=.", url.Values{"name": {"paid"}, "payload": {`"by dot"`}}, session)
			require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
			require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/workflow?id=.&done="), res.Header.Get("Location"))
			var history struct{ History []struct{ Type string } }
			require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/workflow?id=.", &history))
			require.Equal(t, "orchestration.SignalReceived", history.History[len(history.History)-1].Type, "the signal reached .")
		})
	}
}

// Issue 33 point 4 in a browser: "Trigger now…" on schedule "." opened
// the page of the schedule named "trigger". Now it asks about "." and its
// button triggers "."; the links of "." and ".." and of the list and the
// instance "." open their own pages.
func TestBrowserTriggerNowOnDotTriggersDot(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	dotNames(t, f)
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithRefresh(0))
	login(t, ctx, srv.URL+"/schedules", testToken)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#logout"))))

	confirmFirst(t, ctx, chromedp.Click(chromedp.CSS(`[id="schedule-."] button.trigger`)))
	question, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#question")))
	require.NoError(t, err)
	require.Equal(t, "Start a run now, outside the schedule, of .?", question)
	before := len(f.triggered)
	submit(t, ctx, chromedp.Click(chromedp.CSS(`#confirm button`)))
	require.Len(t, f.triggered, before+1)
	require.Equal(t, ".", f.triggered[before].Schedule)

	for _, c := range []struct{ page, link, want string }{
		{"/schedules", `[id="schedule-."] h2 a`, "."},
		{"/schedules", `[id="schedule-.."] h2 a`, ".."},
		{"/schedules", `[id="schedule-trigger"] h2 a`, "trigger"},
		{"/lists", `[id="list-."] a`, "."},
		{"/workflows", `#instances a[href*="id=."]`, "."},
	} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+c.page), chromedp.WaitVisible(chromedp.CSS(c.link))))
		_, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(c.link)))
		require.NoError(t, err, c.link)
		title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
		require.NoError(t, err)
		require.Equal(t, c.want, title, "%s on %s", c.link, c.page)
	}
}
