package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// troubleAt is the instant the troubled database is looked at: three
// hours after the fixture's now, nothing having run meanwhile.
var troubleAt = start.Add(3 * time.Hour)

// newTroubledFixture is newFixture with each kind of trouble at
// troubleAt: the ticker's cursors hours behind and its lease expired
// (nothing ran since start), the schedules overdue (none fired), the
// parked order, the workflow order-1 failed (not paid within its 15
// minutes) and pay-1 stuck (its step renamed while it slept, as a
// deployment would: the replay disagrees with its history).
func newTroubledFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := newFixture(t, newSQLite(t))
	step := "charge"
	require.NoError(t, orchestration.Register(f.engine, "pay", func(c orchestration.Context, _ string) (string, error) {
		id, err := orchestration.Step(c, step, func(context.Context, orchestration.StepInfo) (string, error) { return "ch_1", nil })
		if err != nil {
			return "", err
		}
		return id, c.Sleep(time.Minute)
	}))
	_, err := orchestration.Start(ctx, f.engine, "pay", "pay-1", "")
	require.NoError(t, err)
	wp, err := f.engine.Processor(todolist.WithClock(f.clock))
	require.NoError(t, err)
	_, err = wp.Process(ctx, start)
	require.NoError(t, err)
	step = "charge card"
	for _, by := range []time.Duration{2 * time.Minute, 18 * time.Minute} {
		f.clock.Advance(by)
		_, err = wp.Process(ctx, f.clock.Now())
		require.NoError(t, err)
	}
	return f
}

// newHealthyFixture is a database where all is well at start: cursors
// current, the lease live, a schedule and items due later, a workflow
// completed.
func newHealthyFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db := newSQLite(t)
	f := &fixture{db: db, clock: clockwork.NewFakeClockAt(start)}
	store, err := tick.NewSQLStore(ctx, db.DB)
	require.NoError(t, err)
	lease, err := store.AcquireLease(ctx, "replica-a", start, time.Minute)
	require.NoError(t, err)
	require.NoError(t, store.Advance(ctx, tick.Minute, time.Time{}, start, lease.Term))
	require.NoError(t, store.Advance(ctx, tick.Hour, time.Time{}, start.Truncate(time.Hour), lease.Term))
	f.orders, err = todolist.Open(ctx, db.DB, "pending-orders", todolist.WithListClock(f.clock))
	require.NoError(t, err)
	require.NoError(t, f.orders.Add(ctx, "order-1", start.Add(time.Hour)))
	f.scheduler, err = schedule.Open(ctx, db.DB, func(context.Context, *sqlx.Tx, schedule.Run) error { return nil }, schedule.WithClock(f.clock))
	require.NoError(t, err)
	hourly, err := schedule.Every(time.Hour, start)
	require.NoError(t, err)
	_, err = f.scheduler.Sync(ctx, schedule.Definition{Name: "hourly", Spec: hourly, Command: "report"})
	require.NoError(t, err)
	f.engine, err = orchestration.New(ctx, db.DB, orchestration.WithClock(f.clock))
	require.NoError(t, err)
	require.NoError(t, orchestration.Register(f.engine, "ship", func(orchestration.Context, string) (string, error) { return "shipped", nil }))
	_, err = orchestration.Start(ctx, f.engine, "ship", "ship-1", "")
	require.NoError(t, err)
	wp, err := f.engine.Processor(todolist.WithClock(f.clock))
	require.NoError(t, err)
	_, err = wp.Process(ctx, start)
	require.NoError(t, err)
	return f
}

// summaryLink is a count of the summary as the browser shows it.
type summaryLink struct {
	ID, Text, Class, Href string
}

func readSummary(t *testing.T, ctx context.Context, url string) ([]summaryLink, bool) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#trouble"))))
	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]summaryLink](`[...document.querySelectorAll("#trouble a")].map(a =>
		({id: a.id, text: a.textContent, class: a.className, href: a.getAttribute("href")}))`))
	require.NoError(t, err)
	clear, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#all-clear") !== null`))
	require.NoError(t, err)
	return links, clear
}

// overdueAt counts, straight from the stored schedules, those not
// paused whose next slot is more than a minute before now: the oracle
// of the summary's count.
func overdueAt(t *testing.T, db *sqldb.DB, now time.Time) int {
	t.Helper()
	stored, err := schedule.ReadSchedules(context.Background(), db)
	require.NoError(t, err)
	n := 0
	for _, s := range stored {
		if !s.Paused && !s.Next.IsZero() && now.Sub(s.Next.Add(s.Jitter)) > time.Minute {
			n++
		}
	}
	return n
}

// The summary at the top of every page shows each kind of trouble of a
// troubled database, a count in its colour linking to its rows, which
// the linked page highlights in that colour; a healthy database shows
// none.
func TestBrowserTheSummaryPointsAtTrouble(t *testing.T) {
	ctx := browser(t)
	f := newTroubledFixture(t)
	srv := f.serveAt(t, troubleAt)
	overdue := overdueAt(t, f.db, troubleAt)
	require.Positive(t, overdue)
	want := map[string]summaryLink{
		"trouble-ticker-behind":     {Text: "2 ticker units behind", Class: "trouble-red", Href: "/#units"},
		"trouble-lease-expired":     {Text: "1 lease expired", Class: "trouble-red", Href: "/#lease"},
		"trouble-schedules-overdue": {Text: fmt.Sprintf("%d schedule%s overdue", overdue, map[bool]string{true: "s"}[overdue != 1]), Class: "trouble-red", Href: "/schedules?only=overdue&sort=next"},
		"trouble-lists-behind":      {Class: "trouble-red", Href: "/lists?only=behind"},
		"trouble-items-parked":      {Text: "1 item parked", Class: "trouble-red", Href: "/lists?only=parked"},
		"trouble-workflows-stuck":   {Text: "1 workflow stuck", Class: "trouble-red", Href: "/workflows?state=stuck"},
		"trouble-workflows-failed":  {Text: "1 workflow failed", Class: "trouble-amber", Href: "/workflows?state=failed"},
	}
	for _, page := range []string{"/", "/lists", "/schedules", "/workflows", "/lists/pending-orders", "/workflows/order-1"} {
		links, clear := readSummary(t, ctx, srv.URL+page)
		require.False(t, clear, page)
		got := map[string]summaryLink{}
		for _, l := range links {
			id := l.ID
			l.ID = ""
			if id == "trouble-lists-behind" {
				l.Text = "" // how many lists are behind is the fixture's business
			}
			got[id] = l
		}
		for id, w := range want {
			require.Equal(t, w, got[id], "%s: %s", page, id)
		}
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#units"))))
	shoot(t, ctx, "summary") // docs/dashboard/summary.png

	// Each link (its href, checked above) leads to its rows, highlighted
	// in its colour.
	for id, w := range want {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+w.Href), chromedp.WaitVisible(chromedp.CSS("main"))), id)
		highlighted, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`[...document.querySelectorAll("main .%s:not(a)")].map(e => e.textContent).join(" | ")`, w.Class)))
		require.NoError(t, err)
		require.NotEmpty(t, highlighted, "%s: no row highlighted %s on %s", id, w.Class, w.Href)
		switch id {
		case "trouble-items-parked":
			require.Contains(t, highlighted, "pending-orders")
		case "trouble-workflows-stuck":
			require.Contains(t, highlighted, "pay-1")
		case "trouble-workflows-failed":
			require.Contains(t, highlighted, "order-1")
		case "trouble-lease-expired":
			require.Contains(t, highlighted, "replica-a")
		case "trouble-schedules-overdue":
			require.Equal(t, overdue, strings.Count(highlighted, "overdue"))
		}
	}

	// A ticker beside the dashboard that fails to publish.
	counts := func(failures int64) dashboard.Option {
		return dashboard.WithTickerCounts(func() map[tick.Unit]dashboard.TickerCounts {
			return map[tick.Unit]dashboard.TickerCounts{tick.Minute: {Emitted: 10, PublishFailures: failures}, tick.Hour: {Emitted: 1}}
		})
	}
	failing := serveWith(t, f.db, troubleAt, counts(3))
	links, _ := readSummary(t, ctx, failing.URL+"/")
	require.Contains(t, links, summaryLink{ID: "trouble-ticker-failing", Text: "1 ticker unit failing to publish", Class: "trouble-red", Href: "/#units"})
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#units tr.trouble-red")))
	require.NoError(t, err)
	require.Contains(t, row, "minute")

	healthy := newHealthyFixture(t)
	require.Zero(t, overdueAt(t, healthy.db, start))
	hs := healthy.serveAt(t, start)
	for _, page := range []string{"/", "/lists", "/schedules", "/workflows"} {
		links, clear := readSummary(t, ctx, hs.URL+page)
		require.Empty(t, links, page)
		require.True(t, clear, page)
	}
	links, clear := readSummary(t, ctx, serveWith(t, healthy.db, start, counts(0)).URL+"/")
	require.Empty(t, links, "a ticker that publishes is no trouble")
	require.True(t, clear)
	shoot(t, ctx, "summary-healthy")
}

// A page of 100,000 schedules (PASSAGE_DASHBOARD_SCHEDULES sets another
// number) loads in the browser: the first, a deep one and the overdue
// ones, each timed by the browser's navigation timing.
func TestBrowserAHundredThousandSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 100,000 schedules")
	}
	ctx := browser(t)
	n := 100_000
	if s := envInt("PASSAGE_DASHBOARD_SCHEDULES"); s > 0 {
		n = s
	}
	db := newSQLite(t)
	seedSchedules(t, db.DB, n)
	d, err := dashboard.New(db.DB, dashboard.WithClock(clockwork.NewFakeClockAt(start)), dashboard.WithRefresh(0),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	for _, page := range []string{"/schedules", fmt.Sprintf("/schedules?page=%d", n/50/2), "/schedules?only=overdue&sort=next"} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+page), chromedp.WaitVisible(chromedp.CSS("#count"))))
		loaded, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const e = performance.getEntriesByType("navigation")[0]; return e.loadEventEnd || e.responseEnd; })()`))
		require.NoError(t, err)
		count, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#count")))
		require.NoError(t, err)
		t.Logf("%s of %d schedules: loaded in %.0f ms (navigation timing): %s", page, n, loaded, count)
		require.Contains(t, count, "page ")
		require.Less(t, loaded, 2000.0, "%s took %.0f ms to load", page, loaded)
	}
	shoot(t, ctx, "schedules-100k")
}

// envInt reads a positive number from the environment, 0 when unset.
func envInt(name string) int {
	n := 0
	if s := os.Getenv(name); s != "" {
		_, _ = fmt.Sscan(s, &n)
	}
	return n
}

// serveWith serves a read-only dashboard of db at the instant now with
// opts.
func serveWith(t *testing.T, db *sqldb.DB, now time.Time, opts ...dashboard.Option) *httptest.Server {
	t.Helper()
	d, err := dashboard.New(db.DB, append([]dashboard.Option{dashboard.WithClock(clockwork.NewFakeClockAt(now)), dashboard.WithRefresh(0),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)...)
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return srv
}

// TestTheSummaryNamesASessionHoldingTheHorizon: on PostgreSQL, a session
// idle in a transaction that holds an xid past the grace — a forgotten
// psql holding every delivery back — is named in the summary of every
// page (its pid, application and state) within one reading, and the
// summary clears once the transaction ends.
func TestTheSummaryNamesASessionHoldingTheHorizon(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.Postgres(t)
	f := newFixture(t, db)
	srv := f.serve(t, dashboard.WithHorizonGrace(100*time.Millisecond))

	held := sqldbtest.HoldHorizon(t)

	page := func() string {
		res, err := http.Get(srv.URL + "/schedules")
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		return string(body)
	}
	// The summary is read again each second (summaryTTL) on the
	// dashboard's clock, which is the fixture's fake one: moved on so
	// that every reading is fresh; the transaction's age is the server's.
	named := held.Named()
	require.Eventually(t, func() bool {
		f.clock.Advance(2 * time.Second)
		return strings.Contains(page(), named)
	}, 10*time.Second, 20*time.Millisecond, "the summary names %s", named)
	require.Contains(t, page(), `id="trouble-horizon-held"`)

	require.NoError(t, held.End())
	require.Eventually(t, func() bool {
		f.clock.Advance(2 * time.Second)
		return !strings.Contains(page(), named)
	}, 10*time.Second, 20*time.Millisecond, "no longer named once the transaction ended")
}
