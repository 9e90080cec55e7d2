package dashboard_test

import (
	"cmp"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// The lists page pages on the server, 50 lists a page (two full pages here), keeping ?q= and
// ?sort= in its links: following them from the first page reads every
// list the query keeps once, in the order the oracle (each list's
// stats read by itself, sorted here) has them. Both backends.
func TestTheListsPagePagesInTheOrderAsked(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			const n = 111
			var names []string
			for i := range n {
				name := fmt.Sprintf("list-%03d", (i*7)%n) // added out of order
				if i%10 == 9 {
					name = fmt.Sprintf("other-%03d", i)
				}
				l, err := todolist.Open(ctx, db.DB, name)
				require.NoError(t, err)
				// Four pending counts: the name breaks the many ties.
				for j := range i%4 + 1 {
					require.NoError(t, l.Add(ctx, fmt.Sprintf("item-%d", j), start.Add(-time.Duration(i)*time.Minute)))
				}
				names = append(names, name)
			}
			type stat struct {
				name    string
				pending int
			}
			var want []stat
			for _, name := range names {
				ls, ok, err := todolist.ReadListStats(ctx, db, name, start)
				require.NoError(t, err)
				require.True(t, ok)
				if strings.Contains(name, "list") {
					want = append(want, stat{name, ls.Pending})
				}
			}
			slices.SortFunc(want, func(a, b stat) int { return cmp.Or(cmp.Compare(b.pending, a.pending), strings.Compare(a.name, b.name)) })
			// 100 lists: two full pages, no third.
			require.Len(t, want, 100)
			pages := 2

			srv := (&fixture{db: db}).serveAt(t, start)
			rows := regexp.MustCompile(`<tr id="list-([^"]+)"`)
			links := regexp.MustCompile(`<a id="(prev|next)" href="([^"]+)"`)
			var got []string
			next, page := "/lists?q=LIST&sort=pending", 0
			for next != "" {
				page++
				code, body := getPage(t, srv.URL+next)
				require.Equal(t, http.StatusOK, code, next)
				var onPage []string
				for _, m := range rows.FindAllStringSubmatch(body, -1) {
					onPage = append(onPage, m[1])
				}
				require.Len(t, onPage, min(50, len(want)-len(got)), next)
				got = append(got, onPage...)
				require.Contains(t, body, fmt.Sprintf("%d to-do lists · page %d of %d", len(want), page, pages), next)
				found := map[string]string{}
				for _, m := range links.FindAllStringSubmatch(body, -1) {
					found[m[1]] = html.UnescapeString(m[2])
				}
				if page > 1 {
					require.Equal(t, pageQuery(page-1), found["prev"])
				} else {
					require.NotContains(t, found, "prev")
				}
				next = found["next"]
				if page < pages {
					require.Equal(t, pageQuery(page+1), next)
				}
			}
			require.Equal(t, pages, page)
			var wantNames []string
			for _, s := range want {
				wantNames = append(wantNames, s.name)
			}
			require.Equal(t, wantNames, got)

			// Issue 33 point 5: /api/lists ignored ?q=, ?only=, ?sort= and
			// ?page=. It answers the same pages from the same parameters.
			var fromAPI []string
			for next, page := "/lists?q=LIST&sort=pending", 1; next != ""; page++ {
				var p struct {
					Lists []struct {
						Name    string `json:"name"`
						Pending int    `json:"pending"`
					} `json:"lists"`
					Total, Page, Pages int
					Next               string
				}
				require.Equal(t, http.StatusOK, get(t, srv.URL+"/api"+next, &p), next)
				require.Equal(t, len(want), p.Total, next)
				require.Equal(t, page, p.Page, next)
				require.Equal(t, pages, p.Pages, next)
				for _, l := range p.Lists {
					fromAPI = append(fromAPI, l.Name)
					require.Equal(t, want[len(fromAPI)-1].pending, l.Pending, l.Name)
				}
				next = p.Next
			}
			require.Equal(t, wantNames, fromAPI)
			var parked struct{ Total int }
			require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/lists?only=parked", &parked))
			require.Zero(t, parked.Total, "no list has an item parked")
			require.Equal(t, http.StatusBadRequest, get(t, srv.URL+"/api/lists?sort=sideways", nil))

			code, body := getPage(t, srv.URL+"/lists?page=9")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, body, "No to-do list matches.")
			for _, bad := range []string{"?page=0", "?page=x"} {
				code, body := getPage(t, srv.URL+"/lists"+bad)
				require.Equal(t, http.StatusBadRequest, code, bad)
				require.Contains(t, body, "?page=", bad)
			}
		})
	}
}

// pageQuery is the link to page n of the query the test follows.
func pageQuery(n int) string {
	if n == 1 {
		return "/lists?q=LIST&sort=pending"
	}
	return fmt.Sprintf("/lists?page=%d&q=LIST&sort=pending", n)
}

func TestAPIPagesAListByKeyset(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t)
	var seen []string
	next := ""
	for {
		var page struct {
			Items []struct{ ID string } `json:"items"`
			Next  string                `json:"next"`
		}
		require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/lists/pending-orders/items?limit=7&after="+url.QueryEscape(next), &page))
		for _, it := range page.Items {
			seen = append(seen, it.ID)
		}
		if next = page.Next; next == "" {
			break
		}
	}
	require.Len(t, seen, 40) // the parked one is on its own page
	require.Equal(t, "order-000", seen[0])
	require.Equal(t, "order-039", seen[39])

	var parked struct {
		Items []struct {
			ID        string `json:"id"`
			LastError string `json:"last_error"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/lists/pending-orders/items?parked=1", &parked))
	require.Len(t, parked.Items, 1)
	require.Equal(t, "order-broken", parked.Items[0].ID)
	require.Contains(t, parked.Items[0].LastError, "502 Bad Gateway")
}

// The lists page filters (?q=, ?only=) and sorts (?sort=) its lists.
func TestTheListsPageFiltersAndSorts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serveAt(t, start)
	rows := regexp.MustCompile(`<tr id="list-([^"]+)"`)
	lists := func(query string) []string {
		code, body := getPage(t, srv.URL+"/lists"+query)
		require.Equal(t, http.StatusOK, code, query)
		var out []string
		for _, m := range rows.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	require.Equal(t, []string{"passage-schedules", "passage-workflows", "pending-orders"}, lists(""))
	require.Equal(t, []string{"pending-orders"}, lists("?only=parked"))
	require.Equal(t, []string{"pending-orders", "passage-schedules", "passage-workflows"}, lists("?sort=pending"))
	require.Equal(t, []string{"passage-schedules", "passage-workflows"}, lists("?q=PASSAGE"))
	code, _ := getPage(t, srv.URL+"/lists?sort=sideways")
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = getPage(t, srv.URL+"/lists?only=sideways")
	require.Equal(t, http.StatusBadRequest, code)
}

// A list's page charts its due items by how long they have been due:
// the fixture's four due items are 0, 37, 74 and 111 minutes late.
func TestTheListPageChartsHowLateItsDueItemsAre(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	code, body := getPage(t, f.serveAt(t, start).URL+"/lists/pending-orders")
	require.Equal(t, http.StatusOK, code)
	for _, bar := range []string{"&lt; 1 min: 1", "1–5 min: 0", "5–15 min: 0", "15 min–1 h: 1", "1–6 h: 2", "6–24 h: 0", "&gt; 1 d: 0"} {
		require.Contains(t, body, "<title>"+bar+"</title>")
	}
}

// TestBrowserMillionItems pages a list of a million pending items in the
// browser and reports how long a page takes to load. PASSAGE_DASHBOARD_ITEMS
// sets another size.
func TestBrowserMillionItems(t *testing.T) {
	ctx := browser(t)
	n := 1_000_000
	if s := os.Getenv("PASSAGE_DASHBOARD_ITEMS"); s != "" {
		_, err := fmt.Sscan(s, &n)
		require.NoError(t, err)
	}
	db := newSQLite(t)
	f := &fixture{db: db}
	fillList(t, db.DB, "big", n)
	srv := f.serveAt(t, start)

	var (
		first, next string
		loaded      float64
	)
	for i := range 3 {
		url := srv.URL + "/lists/big"
		if next != "" {
			url += "?after=" + next
		}
		begin := time.Now()
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#items"))))
		elapsed := time.Since(begin)
		var err error
		loaded, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByType("navigation")[0].loadEventEnd`))
		require.NoError(t, err)
		first, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#items tbody tr:first-child td.id")))
		require.NoError(t, err)
		href, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#next"), "href"))
		require.NoError(t, err)
		next = href.Value
		t.Logf("page %d of a %d-item list: loaded in %.0f ms (navigation timing), %s until visible; first item %s", i+1, n, loaded, elapsed.Round(time.Millisecond), first)
		require.Equal(t, fmt.Sprintf("item-%07d", i*50), first)
		next = next[strings.Index(next, "after=")+len("after="):]
	}
	require.Contains(t, text(t, ctx, srv.URL+"/lists/big", "#pending"), thousands(n))
	shoot(t, ctx, "list-million")
}

// fillList adds n items to list, one every 2 seconds from an hour before
// start on, with AddMany.
func fillList(t testing.TB, db *sqlx.DB, list string, n int) {
	t.Helper()
	ctx := context.Background()
	l, err := todolist.Open(ctx, db, list)
	require.NoError(t, err)
	const chunk = 100_000
	items := make([]todolist.NewItem, 0, chunk)
	for i := range n {
		items = append(items, todolist.NewItem{ID: fmt.Sprintf("item-%07d", i), Due: start.Add(-time.Hour + time.Duration(i)*2*time.Second)})
		if len(items) == chunk || i == n-1 {
			require.NoError(t, l.AddMany(ctx, items))
			items = items[:0]
		}
	}
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	out := ""
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out += ","
		}
		out += string(s[i])
	}
	return out
}

// BenchmarkMillionItemPage serves a page of a list of a million pending
// items (PASSAGE_DASHBOARD_ITEMS sets another size): the server's side of
// what TestBrowserMillionItems measures in the browser.
func BenchmarkMillionItemPage(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("PASSAGE_DASHBOARD_ITEMS"); s != "" {
		_, err := fmt.Sscan(s, &n)
		require.NoError(b, err)
	}
	db := newSQLite(b)
	f := &fixture{db: db}
	fillList(b, db.DB, "big", n)
	srv := f.serveAt(b, start)
	for _, page := range []struct{ name, query string }{
		{"first", ""},
		{"middle", "?after=" + todolist.Cursor{At: start.Add(time.Duration(n) * time.Second), ID: "item"}.String()},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				res, err := http.Get(srv.URL + "/lists/big" + page.query)
				require.NoError(b, err)
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				require.Equal(b, http.StatusOK, res.StatusCode)
			}
		})
	}
}
