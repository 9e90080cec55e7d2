package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

func TestActionsNeedTheTokenAndTheSameOrigin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	readOnly := f.serve(t)
	writable := f.serve(t, dashboard.WithAdminToken(testToken))
	post := func(base, path, bearer string, header map[string]string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(""))
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	code, body := post(readOnly.URL, "/schedules/poll/pause", testToken, nil)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "read-only")
	code, body = post(writable.URL, "/schedules/poll/pause", "", nil)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "forbidden")
	code, _ = post(writable.URL, "/schedules/poll/pause", "wrong-token-wrong-token", nil)
	require.Equal(t, http.StatusForbidden, code)
	// A browser's cross-site POST is refused even with the token.
	code, _ = post(writable.URL, "/schedules/poll/pause", testToken, map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, code)
	code, _ = post(writable.URL, "/schedules/poll/pause", testToken, map[string]string{"Origin": "https://evil.example"})
	require.Equal(t, http.StatusForbidden, code)
	stored := schedules(t, f)
	require.False(t, stored["poll"], "a refused pause paused poll")

	code, body = post(writable.URL, "/schedules/poll/pause", testToken, nil)
	require.Equal(t, http.StatusOK, code, body)
	require.True(t, schedules(t, f)["poll"])
	code, body = post(writable.URL, "/schedules/nothing/pause", testToken, nil)
	require.Equal(t, http.StatusNotFound, code, body)
}

// schedules reads which schedules are paused.
func schedules(t *testing.T, f *fixture) map[string]bool {
	t.Helper()
	all, err := f.scheduler.List(context.Background())
	require.NoError(t, err)
	out := map[string]bool{}
	for _, s := range all {
		out[s.Name] = s.Paused
	}
	return out
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
