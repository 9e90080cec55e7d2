package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

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

// start is the fixture's "now": a Friday morning in Warsaw.
var start = time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)

// testToken is the admin token of the dashboards the tests start.
const testToken = "correct-horse-battery-staple"

// fixture is a database holding real passage state, made through the
// library's own APIs, and the handles that made it.
type fixture struct {
	db        *sqldb.DB
	clock     *clockwork.FakeClock
	scheduler *schedule.Scheduler
	engine    *orchestration.Engine
	orders    *todolist.List
	triggered []schedule.Run
	runID     string
}

// newFixture fills a database with: ticker cursors for minute and hour and
// a lease held by "replica-a" in term 3; the to-do list "pending-orders"
// with items due over the next day and one parked by a failing action;
// the schedules "weekly-report" (cron, Europe/Warsaw) and "poll" (every
// 8 hours), one with a triggered run; and the workflow instances
// "order-1" (waiting for its "paid" signal) and "order-2" (completed).
func newFixture(t testing.TB, db *sqldb.DB) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{db: db, clock: clockwork.NewFakeClockAt(start)}

	store, err := tick.NewSQLStore(ctx, db.DB)
	require.NoError(t, err)
	lease, err := store.AcquireLease(ctx, "replica-a", start, time.Minute)
	require.NoError(t, err)
	for range 2 { // term 3: the lease was taken over twice
		require.NoError(t, store.ReleaseLease(ctx, "replica-a", lease.Term))
		lease, err = store.AcquireLease(ctx, "replica-a", start, time.Minute)
		require.NoError(t, err)
	}
	require.NoError(t, store.Advance(ctx, tick.Minute, time.Time{}, start.Add(-3*time.Minute), lease.Term))
	require.NoError(t, store.Advance(ctx, tick.Hour, time.Time{}, start.Truncate(time.Hour), lease.Term))

	f.orders, err = todolist.Open(ctx, db.DB, "pending-orders", todolist.WithListClock(f.clock))
	require.NoError(t, err)
	var items []todolist.NewItem
	for i := range 40 {
		items = append(items, todolist.NewItem{ID: fmt.Sprintf("order-%03d", i), Due: start.Add(time.Duration(i-3) * 37 * time.Minute)})
	}
	items = append(items, todolist.NewItem{ID: "order-broken", Due: start.Add(-time.Hour)})
	require.NoError(t, f.orders.AddMany(ctx, items))
	// One processing pass at now: the broken order fails and is parked,
	// the others due are left due (their action says "not yet").
	p, err := todolist.NewProcessor(f.orders, func(_ context.Context, it todolist.Item) error {
		if it.ID == "order-broken" {
			return errors.New("payment provider said 502 Bad Gateway")
		}
		return notYet{}
	}, todolist.WithClock(f.clock), todolist.WithMaxAttempts(1))
	require.NoError(t, err)
	_, err = p.Process(ctx, start)
	require.NoError(t, err)

	handler := func(_ context.Context, _ *sqlx.Tx, run schedule.Run) error {
		f.triggered = append(f.triggered, run)
		return nil
	}
	f.scheduler, err = schedule.Open(ctx, db.DB, handler, schedule.WithClock(f.clock))
	require.NoError(t, err)
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	weekly, err := schedule.Cron("0 12 * * FRI", warsaw)
	require.NoError(t, err)
	every8h, err := schedule.Every(8*time.Hour, start.Add(-24*time.Hour))
	require.NoError(t, err)
	_, err = f.scheduler.Sync(ctx,
		schedule.Definition{Name: "weekly-report", Spec: weekly, Command: "report"},
		schedule.Definition{Name: "poll", Spec: every8h, Command: "poll"})
	require.NoError(t, err)
	run, err := f.scheduler.Trigger(ctx, "weekly-report")
	require.NoError(t, err)
	f.runID = run.RunID

	f.engine, err = orchestration.New(ctx, db.DB, orchestration.WithClock(f.clock))
	require.NoError(t, err)
	require.NoError(t, orchestration.Register(f.engine, "order", func(c orchestration.Context, id string) (string, error) {
		if _, err := orchestration.Step(c, "reserve stock", func(context.Context, orchestration.StepInfo) (string, error) { return "res-" + id, nil }); err != nil {
			return "", err
		}
		if id == "order-2" {
			return "shipped", nil
		}
		payment, paid, err := orchestration.Await[string](c, "paid", 15*time.Minute)
		if err != nil {
			return "", err
		}
		if !paid {
			return "", errors.New("not paid in time")
		}
		return "paid " + payment, nil
	}))
	for _, id := range []string{"order-1", "order-2"} {
		_, err = orchestration.Start(ctx, f.engine, "order", id, id)
		require.NoError(t, err)
	}
	wp, err := f.engine.Processor(todolist.WithClock(f.clock))
	require.NoError(t, err)
	_, err = wp.Process(ctx, start)
	require.NoError(t, err)
	return f
}

// notYet is a version conflict: not a failure, the item stays due.
type notYet struct{}

func (notYet) Error() string  { return "not yet" }
func (notYet) Conflict() bool { return true }

// serve starts the dashboard of f's database on a test server.
func (f *fixture) serve(t *testing.T, opts ...dashboard.Option) *httptest.Server {
	t.Helper()
	base := []dashboard.Option{dashboard.WithClock(f.clock), dashboard.WithScheduler(f.scheduler), dashboard.WithEngine(f.engine),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	d, err := dashboard.New(f.db.DB, append(base, opts...)...)
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return srv
}

func newSQLite(t testing.TB) *sqldb.DB {
	db, _ := sqldbtest.SQLite(t)
	return db
}

// serveAt serves a read-only dashboard of f's database at the instant now.
func (f *fixture) serveAt(t testing.TB, now time.Time) *httptest.Server {
	d, err := dashboard.New(f.db.DB, dashboard.WithClock(clockwork.NewFakeClockAt(now)), dashboard.WithRefresh(0),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return srv
}

// syncBuffer is a log destination the handler and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// post sends form to u with header h and returns the response, its body read.
func post(t *testing.T, u string, form url.Values, h http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(body)
}

func sessionOf(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == "passage_admin" {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", res.Header)
	return nil
}

// withCookie is a header carrying c.
func withCookie(c *http.Cookie) http.Header { return http.Header{"Cookie": {c.Name + "=" + c.Value}} }

func get(t *testing.T, u string, into any) int {
	t.Helper()
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if into != nil && res.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(body, into), string(body))
	}
	return res.StatusCode
}

func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(body)
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
