package dashboard_test

import (
	"cmp"
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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
