package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
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

// seedSchedules stores n schedules named sched-0000001…, each every
// 15 minutes with its next slot's to-do item, three runs, and one in
// eleven paused, one in seven overdue by 40 minutes at start, one in
// thirteen failing: Sync stores one through the library, and set-wise
// statements copy its row n times (Sync of 100,000 definitions takes
// minutes; the copy, seconds).
func seedSchedules(t testing.TB, db *sqlx.DB, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := schedule.Open(ctx, db, func(context.Context, *sqlx.Tx, schedule.Run) error { return nil })
	require.NoError(t, err)
	every, err := schedule.Every(15*time.Minute, start.Add(-24*time.Hour))
	require.NoError(t, err)
	_, err = s.Sync(ctx, schedule.Definition{Name: "template", Spec: every, Command: "poll"})
	require.NoError(t, err)
	next := sqldb.EncodeTime(start.Add(15 * time.Minute))
	late := sqldb.EncodeTime(start.Add(-40 * time.Minute))
	q := func(query string, args ...any) {
		t.Helper()
		_, err := db.ExecContext(ctx, db.Rebind(query), args...)
		require.NoError(t, err, query)
	}
	const numbers = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) `
	const name = `('sched-' || substr(CAST(10000000 + i AS TEXT), 2))`
	q(numbers+`INSERT INTO schedule_schedules (name, spec, hash, command, catch_up, paused, runs, next_slot, overlap)
SELECT `+name+`, t.spec, t.hash, t.command, t.catch_up, CASE WHEN i % 11 = 0 THEN 1 ELSE 0 END, 3,
	CASE WHEN i % 11 = 0 THEN 0 WHEN i % 7 = 0 THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END, t.overlap
FROM n, schedule_schedules t WHERE t.name = 'template'`, n, late, next)
	q(numbers+`INSERT INTO todolist_items (list, id, due, run_at, attempts, last_error)
SELECT 'passage-schedules', `+name+`, CASE WHEN i % 7 = 0 THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END, CASE WHEN i % 7 = 0 THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END,
	CASE WHEN i % 13 = 0 THEN 2 ELSE 0 END, CASE WHEN i % 13 = 0 THEN 'the endpoint said 503' ELSE '' END
FROM n WHERE i % 11 <> 0`, n, late, next, late, next)
	for k := range 3 {
		slot := start.Add(time.Duration(k-3) * 15 * time.Minute)
		q(numbers+`INSERT INTO schedule_runs (slot_id, run_id, schedule, slot, fired_at, attempt)
SELECT `+name+` || '@`+slot.Format(time.RFC3339)+`', `+name+` || '/run-`+fmt.Sprint(k)+`', `+name+`, CAST(? AS BIGINT), CAST(? AS BIGINT) + CAST(i % 90 AS BIGINT) * 1000000000, 1 FROM n`,
			n, sqldb.EncodeTime(slot), sqldb.EncodeTime(slot))
	}
	if sqldb.DialectOf(db) == sqldb.Postgres {
		// As autovacuum would soon: without statistics the planner joins
		// every run to the page instead of looking up the page's.
		q(`ANALYZE`)
	}
}

// BenchmarkSchedulesPage renders pages of the schedules page of a
// database (SQLite, and PostgreSQL with PASSAGE_TEST_POSTGRES) holding
// 100,000 schedules (PASSAGE_DASHBOARD_SCHEDULES sets
// another number) over HTTP, and reads the same page with
// schedule.ReadPage alone, the page's one statement and its scan: the
// floor. It reports ms/page and the ratio page/floor. The summary at
// the top of the page is read at most once a second (summaryTTL), so
// the pages' figures leave it out but for the first: "summary" reads
// it uncached, what a page costs once a second.
func BenchmarkSchedulesPage(b *testing.B) {
	n := 100_000
	if s := os.Getenv("PASSAGE_DASHBOARD_SCHEDULES"); s != "" {
		_, err := fmt.Sscan(s, &n)
		require.NoError(b, err)
	}
	for _, backend := range sqldbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			db, _ := backend.Open(b)
			benchmarkSchedulesPage(b, db, n)
		})
	}
}

func benchmarkSchedulesPage(b *testing.B, db *sqldb.DB, n int) {
	began := time.Now()
	seedSchedules(b, db.DB, n)
	b.Logf("seeded %d schedules in %s", n, time.Since(began).Round(time.Millisecond))
	f := &fixture{db: db}
	srv := f.serveAt(b, start)
	b.Run("summary", func(b *testing.B) {
		d, err := dashboard.New(db.DB)
		require.NoError(b, err)
		for b.Loop() {
			n, failed := d.ReadSummary(context.Background(), start)
			require.Empty(b, failed)
			require.Positive(b, n)
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/summary")
	})
	for _, page := range []struct {
		name, query string
		read        schedule.PageQuery
	}{
		{"first", "", schedule.PageQuery{}},
		{"page-1000", "?page=1000", schedule.PageQuery{Offset: 999 * 50}},
		{"overdue-by-next", "?only=overdue&sort=next", schedule.PageQuery{Filter: schedule.Overdue, Sort: schedule.ByNext}},
		{"search", "?q=sched-00999", schedule.PageQuery{Match: "sched-00999"}},
	} {
		var floor, full time.Duration
		page.read.Limit, page.read.Runs, page.read.Now, page.read.Grace = 50, 5, start, time.Minute
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				began := time.Now()
				_, err := schedule.ReadPage(context.Background(), db.DB, page.read)
				require.NoError(b, err)
				floor += time.Since(began)
				began = time.Now()
				res, err := http.Get(srv.URL + "/schedules" + page.query)
				require.NoError(b, err)
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				require.Equal(b, http.StatusOK, res.StatusCode)
				full += time.Since(began)
			}
			b.ReportMetric(float64(full.Microseconds())/1000/float64(b.N), "ms/page")
			b.ReportMetric(float64(floor.Microseconds())/1000/float64(b.N), "ms/floor")
			b.ReportMetric(float64(full)/float64(max(floor, 1)), "page/floor")
		})
	}
}
