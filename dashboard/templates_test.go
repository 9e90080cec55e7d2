package dashboard_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/todolist"
)

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
