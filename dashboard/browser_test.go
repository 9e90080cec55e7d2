package dashboard_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/browsertest"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/todolist"
)

// browser starts a headless Chromium for one test, or skips the test when
// none can be found. The flags keep it from reaching out to the network
// (updates, sync, field trials), which a closed network refuses.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := browsertest.Chromium()
	if path == "" {
		t.Skip("no Chromium found (install the Debian packages chromium and chromium-driver, or set PASSAGE_CHROMIUM): browser tests skipped")
	}
	opts := append(browsertest.Options(path, t.TempDir()), chromedp.WindowSize(1280, 900))
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// The first action starts the browser, which lives as long as the
	// context of that call: no timeout on it, one on what follows.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start Chromium at %s", path)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	return ctx
}

// screenshots is where page screenshots go: $PASSAGE_SCREENSHOTS, or the
// test's temporary directory.
func screenshots(t *testing.T) string {
	if dir := os.Getenv("PASSAGE_SCREENSHOTS"); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return dir
	}
	return t.TempDir()
}

// shoot saves a full-page screenshot as name.png.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	// Quality 100 is what makes chromedp capture PNG rather than JPEG.
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(screenshots(t), name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

// submit runs action, which sends a form, and waits for the page its
// answer loads to show #done. Waiting for #done alone could find it on the
// page before, which the previous action left: the test then went on
// while the form was still in flight (a navigation aborted by the next
// one, or a check made before the action happened).
func submit(t *testing.T, ctx context.Context, action chromedp.Action[chromedp.Void]) {
	t.Helper()
	_, err := chromedp.RunResponse(ctx, action)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#done"))))
}

// text returns the text of the first element sel matches, once visible.
func text(t *testing.T, ctx context.Context, url, sel string) string {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(sel))))
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
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

// hovered returns what hovering each time in the first element sel
// matches shows (its title, the exact instant), one a line: the pages
// print times relative to now.
func hovered(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelector(`+"`"+sel+"`"+`).querySelectorAll("time")].map(e => e.title)`))
	require.NoError(t, err)
	return strings.Join(s, "\n")
}

// until waits for a JavaScript condition to hold across page loads: a
// Poll ends with its page, so each check is its own evaluation, and an
// error while a page is being replaced only means "not yet".
func until(t *testing.T, ctx context.Context, condition string) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](condition)); err == nil && ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", condition, ctx.Err())
		case <-tick.C:
		}
	}
}

// login opens url and logs in with token.
func login(t *testing.T, ctx context.Context, url, token string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=token]`), token)))
	// Until the answer's page has loaded, the login page is still there.
	_, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.CSS(`#login`)))
	require.NoError(t, err)
}

func TestBrowserActionsWithTheToken(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithRefresh(0))

	// A wrong token is refused and shows no action.
	login(t, ctx, srv.URL+"/schedules", "not-the-token-at-all")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("body"))))
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.Contains(t, body, "wrong admin token")

	login(t, ctx, srv.URL+"/schedules", testToken)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#logout"))))
	submit(t, ctx, chromedp.Click(chromedp.CSS(`#schedule-poll button.pause`)))
	require.True(t, schedules(t, f)["poll"], "pause from the page did not pause poll")
	require.Contains(t, text(t, ctx, srv.URL+"/schedules", "#schedule-poll"), "paused")
	submit(t, ctx, chromedp.Click(chromedp.CSS(`#schedule-poll button.resume`)))
	require.False(t, schedules(t, f)["poll"])
	confirmFirst(t, ctx, chromedp.Click(chromedp.CSS(`#schedule-weekly-report button.trigger`)))
	submit(t, ctx, chromedp.Click(chromedp.CSS(`#confirm button`)))
	done, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#done")))
	require.NoError(t, err)
	require.Contains(t, done, "triggered weekly-report: run ")
	require.Len(t, f.triggered, 2, "the page's trigger did not reach the scheduler's handler")
	require.Contains(t, text(t, ctx, srv.URL+"/schedules", "#schedule-weekly-report"), f.triggered[1].RunID)

	// Re-activate the parked item.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/lists/pending-orders?parked=1"), chromedp.WaitVisible(chromedp.CSS("button.reactivate"))))
	submit(t, ctx, chromedp.Click(chromedp.CSS("button.reactivate")))
	it, err := f.orders.Get(context.Background(), "order-broken")
	require.NoError(t, err)
	require.False(t, it.Parked)

	// Signal a workflow, then see it on the timeline.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/workflows/order-1"), chromedp.WaitVisible(chromedp.CSS("#signal")),
		chromedp.SendKeys(chromedp.CSS(`#signal input[name=name]`), "paid"),
		chromedp.SendKeys(chromedp.CSS(`#signal input[name=payload]`), `"pay_42"`)))
	submit(t, ctx, chromedp.Submit(chromedp.CSS(`#signal`)))
	require.Contains(t, text(t, ctx, srv.URL+"/workflows/order-1", "#timeline"), `signal paid received: "pay_42"`)
	shoot(t, ctx, "workflow-admin")
	confirmFirst(t, ctx, chromedp.Click(chromedp.CSS(`#cancel button`)))
	submit(t, ctx, chromedp.Click(chromedp.CSS(`#confirm button`)))
	require.Contains(t, text(t, ctx, srv.URL+"/workflows/order-1", "#timeline"), "cancel requested")
}

// confirmFirst runs action, a click on a button that cannot be undone,
// and waits for the page that asks first.
func confirmFirst(t *testing.T, ctx context.Context, action chromedp.Action[chromedp.Void]) {
	t.Helper()
	_, err := chromedp.RunResponse(ctx, action)
	require.NoError(t, err)
	asks, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#confirm") !== null`))
	require.NoError(t, err)
	require.True(t, asks, "the button did not ask first")
}

// rlo is a name with a right-to-left override in it: shown as typed, it
// reversed what followed it on the line ("abc" then "fed", and the
// words after the name dragged to its left).
const rlo = "abc\u202edef"

// Every name the pages show is isolated in a <bdi>, so an override in it
// stops at its end; text made of parts (the title, a done message) shows
// the control as \u202e.
func TestBrowserRightToLeftOverridesStayInTheirNames(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	bg := context.Background()
	every, err := schedule.Every(time.Hour, start)
	require.NoError(t, err)
	weekly, err := schedule.Every(7*24*time.Hour, start)
	require.NoError(t, err)
	_, err = f.scheduler.Sync(bg,
		schedule.Definition{Name: "weekly-report", Spec: weekly, Command: "report"},
		schedule.Definition{Name: "poll", Spec: every, Command: "poll"},
		schedule.Definition{Name: rlo, Spec: every, Command: rlo})
	require.NoError(t, err)
	list, err := todolist.Open(bg, f.db.DB, rlo)
	require.NoError(t, err)
	require.NoError(t, list.Add(bg, "item-"+rlo, start.Add(time.Hour)))
	_, err = orchestration.Start(bg, f.engine, "order", rlo, rlo)
	require.NoError(t, err)
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithRefresh(0))

	// Pausing it from the page: its name in the heading, then the
	// "paused" tag to its right.
	login(t, ctx, srv.URL+"/schedules", testToken)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#logout"))))
	submit(t, ctx, chromedp.Click(chromedp.CSS(`[id^="schedule-abc"] button.pause`)))
	done, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#done")))
	require.NoError(t, err)
	require.Equal(t, `paused abc\u202edef`, done)
	type placed struct {
		Text     string
		InBdi    bool
		TagAfter bool
	}
	heading, err := chromedp.Run(ctx, chromedp.Evaluate[placed](`(() => {
		const h2 = document.querySelector('[id^="schedule-abc"] h2');
		const walk = document.createTreeWalker(h2, NodeFilter.SHOW_TEXT);
		let node;
		while ((node = walk.nextNode()) && !node.data.includes("abc")) {}
		const at = node.data.indexOf("abc"), name = document.createRange();
		name.setStart(node, at);
		name.setEnd(node, at + 7);
		return {text: name.toString(), inBdi: node.parentElement.closest("bdi") !== null,
			tagAfter: h2.querySelector(".tag").getBoundingClientRect().left >= name.getBoundingClientRect().right - 0.5};
	})()`))
	require.NoError(t, err)
	require.Equal(t, placed{Text: rlo, InBdi: true, TagAfter: true}, heading)
	shoot(t, ctx, "rlo-schedules")

	// On every page, each text holding the override is inside a <bdi>,
	// and the title holds none.
	for _, page := range []string{"/schedules", "/lists", "/lists/" + url.PathEscape(rlo), "/workflows", "/workflows/" + url.PathEscape(rlo),
		"/schedules/" + url.PathEscape(rlo) + "/trigger", "/workflows/" + url.PathEscape(rlo) + "/cancel"} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+page), chromedp.WaitVisible(chromedp.CSS("main"))))
		loose, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
			const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
			let seen = 0, node;
			while ((node = walk.nextNode())) {
				if (!node.data.includes("\u202e")) continue;
				seen++;
				if (!node.parentElement.closest("bdi")) out.push(node.parentElement.outerHTML);
			}
			if (document.title.includes("\u202e")) out.push("title: " + document.title);
			if (seen === 0) out.push("no name with the override shown");
			return out;
		})()`))
		require.NoError(t, err)
		require.Empty(t, loose, "%s: the override outside a <bdi>", page)
	}
}
