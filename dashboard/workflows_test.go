package dashboard_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/orchestration"
)

// The workflows page sorts on the server (?sort=started here: newest
// first, then by ID), 50 instances a page by ?page=: following its
// links reads every instance once in the order their histories, read
// one by one, say. Both backends.
func TestTheWorkflowsPageSortsAndPages(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			f := newFixture(t, db)
			ids := []string{"order-1", "order-2"}
			for i := range 61 {
				if i%4 == 0 { // starts a minute apart, four at a time: ties go by ID
					f.clock.Advance(time.Minute)
				}
				id := fmt.Sprintf("bulk-%02d", (i*17)%61)
				_, err := orchestration.Start(ctx, f.engine, "order", id, id)
				require.NoError(t, err)
				ids = append(ids, id)
			}
			started := map[string]time.Time{}
			for _, id := range ids {
				h, err := orchestration.ReadHistory(ctx, db, id)
				require.NoError(t, err)
				started[id] = h[0].RecordedAt
			}
			slices.SortFunc(ids, func(a, b string) int { return cmp.Or(started[b].Compare(started[a]), strings.Compare(a, b)) })

			srv := f.serve(t)
			var got []string
			next, pages := "/workflows?sort=started", 0
			for next != "" {
				pages++
				var v struct {
					Instances []struct{ ID string } `json:"instances"`
					Page      int                   `json:"page"`
					NextLink  string                `json:"next_link"`
					PrevLink  string                `json:"prev_link"`
				}
				require.Equal(t, http.StatusOK, get(t, srv.URL+"/api"+next, &v), next)
				require.Equal(t, pages, v.Page)
				for _, i := range v.Instances {
					got = append(got, i.ID)
				}
				if pages > 1 {
					require.Equal(t, "/workflows?sort=started", v.PrevLink) // page 1: two pages in all
				} else {
					require.Empty(t, v.PrevLink)
				}
				next = v.NextLink
			}
			require.Equal(t, 2, pages)
			require.Equal(t, ids, got)

			code, body := getPage(t, srv.URL+"/workflows?sort=started")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, body, `<a id="next" href="/workflows?page=2&amp;sort=started">`)
			require.Contains(t, body, `<option value="started" selected>`)
			code, body = getPage(t, srv.URL+"/workflows?page=2&sort=started")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, body, `<a id="prev" href="/workflows?sort=started">`)
			require.NotContains(t, body, `id="next"`)
			for _, bad := range []string{"?sort=sideways", "?sort=state&after=bulk-01", "?page=0"} {
				code, _ := getPage(t, srv.URL+"/workflows"+bad)
				require.Equal(t, http.StatusBadRequest, code, bad)
			}
		})
	}
}

// The state tabs keep the order asked for.
func TestTheWorkflowsStateTabsKeepTheSort(t *testing.T) {
	t.Parallel()
	srv := newFixture(t, newSQLite(t)).serve(t)
	code, body := getPage(t, srv.URL+"/workflows?sort=state")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<a href="/workflows?sort=state" class="here">all</a>`)
	require.Contains(t, body, `<a href="/workflows?state=stuck&amp;sort=state" >`)
}

// The workflows page keeps the instances whose ID starts with ?q=, in
// the state asked for.
func TestTheWorkflowsPageFiltersByIDAndState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t)
	ids := func(query string) []string {
		var v struct {
			Instances []struct{ ID string } `json:"instances"`
		}
		require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/workflows"+query, &v), query)
		var out []string
		for _, i := range v.Instances {
			out = append(out, i.ID)
		}
		return out
	}
	require.Equal(t, []string{"order-1", "order-2"}, ids(""))
	require.Equal(t, []string{"order-2"}, ids("?q=order-2"))
	require.Equal(t, []string{"order-1"}, ids("?q=order&state=running"))
	require.Empty(t, ids("?q=ORDER"))
	code, body := getPage(t, srv.URL+"/workflows?q=order-1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `value="order-1"`)
}

// A signal the server refuses (its payload is not JSON) comes back on
// the instance's page with the name and payload as they were typed and
// the error beside them: it showed an error page, and what was typed was
// lost.
func TestBrowserASignalsErrorKeepsWhatWasTyped(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithRefresh(0))
	login(t, ctx, srv.URL+"/workflows/order-1", testToken)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#signal")),
		chromedp.SendKeys(chromedp.CSS(`#signal input[name=name]`), "paid"),
		chromedp.SendKeys(chromedp.CSS(`#signal input[name=payload]`), `{"amount": 12,}`)))
	res, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.CSS(`#signal`)))
	require.NoError(t, err)
	require.Equal(t, int64(http.StatusBadRequest), res.Status)
	form, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.querySelector("#signal input[name=name]")?.value,
		document.querySelector("#signal input[name=payload]")?.value, document.querySelector("#signal-error")?.textContent]`))
	require.NoError(t, err)
	require.Equal(t, []string{"paid", `{"amount": 12,}`, `signal "paid": payload "{\"amount\": 12,}" is not JSON`}, form)
	shoot(t, ctx, "workflow-signal-error")

	// Corrected, the same form sends it.
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#signal input[name=payload]`), `{"amount": 12}`)))
	submit(t, ctx, chromedp.Submit(chromedp.CSS(`#signal`)))
	require.Contains(t, text(t, ctx, srv.URL+"/workflows/order-1", "#timeline"), `signal paid received: {"amount":12}`)
}
