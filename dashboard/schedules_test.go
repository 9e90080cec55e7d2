package dashboard_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The schedules page pages, filters and sorts on the server, and shows a
// schedule's failed attempts; the API answers the same page.
func TestTheSchedulesPagePagesFiltersAndSorts(t *testing.T) {
	t.Parallel()
	db := newSQLite(t)
	const n = 120
	seedSchedules(t, db.DB, n)
	srv := (&fixture{db: db}).serveAt(t, start)
	sections := regexp.MustCompile(`<section class="schedule[^"]*" id="schedule-([^"]+)"`)
	names := func(body string) []string {
		var out []string
		for _, m := range sections.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	// The oracle: the seed's rules.
	var overdue, failing []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("sched-%07d", i)
		if i%11 != 0 && i%7 == 0 {
			overdue = append(overdue, name)
		}
		if i%11 != 0 && i%13 == 0 {
			failing = append(failing, name)
		}
	}

	code, body := getPage(t, srv.URL+"/schedules")
	require.Equal(t, http.StatusOK, code)
	got := names(body)
	require.Len(t, got, 50)
	require.Equal(t, "sched-0000001", got[0])
	require.Contains(t, body, "121 schedules · page 1 of 3")
	require.Contains(t, body, `<a id="next" href="/schedules?page=2">`)
	require.NotContains(t, body, `id="prev"`)
	code, body = getPage(t, srv.URL+"/schedules?page=3")
	require.Equal(t, http.StatusOK, code)
	got = names(body)
	require.Equal(t, []string{"sched-0000101", "sched-0000120", "template"}, []string{got[0], got[19], got[20]})
	require.Contains(t, body, `<a id="prev" href="/schedules?page=2">`)
	require.NotContains(t, body, `id="next"`)

	code, body = getPage(t, srv.URL+"/schedules?only=overdue&sort=next&q=SCHED")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, overdue, names(body), "overdue, by next slot then name")
	require.Equal(t, len(overdue), strings.Count(body, `<span class="tag red">overdue</span>`), "40 minutes late is red")

	code, body = getPage(t, srv.URL+"/schedules?only=failing")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, failing, names(body))
	require.Equal(t, len(failing), strings.Count(body, "Failed attempts at this slot: <strong>2</strong>"))
	require.Contains(t, body, "the endpoint said 503")

	var api struct {
		Schedules []struct {
			Name           string `json:"name"`
			FailedAttempts int    `json:"failed_attempts"`
			Overdue        string `json:"overdue"`
		} `json:"schedules"`
		Total, Page, Pages int
		Next               string
	}
	require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/schedules?page=2", &api))
	require.Equal(t, 121, api.Total)
	require.Equal(t, 2, api.Page)
	require.Equal(t, 3, api.Pages)
	require.Len(t, api.Schedules, 50)
	require.Equal(t, "sched-0000051", api.Schedules[0].Name)
	require.Equal(t, "/schedules?page=3", api.Next)

	// A schedule's own page: its failed attempts and how late its runs
	// fired (the seed fires each run i mod 90 seconds after its slot).
	code, body = getPage(t, srv.URL+"/schedules/sched-0000013")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Failed attempts at this slot: <strong>2</strong>")
	require.Contains(t, body, "the endpoint said 503")
	require.Equal(t, 3, strings.Count(body, `<rect class="bar"`))
	require.Contains(t, body, "<title>seconds from slot to firing, last runs: 39 in all, at most 13 a bar</title>")
	code, _ = getPage(t, srv.URL+"/schedules/no-such-schedule")
	require.Equal(t, http.StatusNotFound, code)

	for _, bad := range []string{"?page=0", "?page=x", "?only=late", "?sort=sideways"} {
		code, body := getPage(t, srv.URL+"/schedules"+bad)
		require.Equal(t, http.StatusBadRequest, code, bad)
		require.Contains(t, body, strings.SplitN(bad[1:], "=", 2)[0], bad)
	}
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
