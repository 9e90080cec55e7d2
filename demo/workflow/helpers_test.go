package workflow_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/demo/workflow"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/todolist"
)

// start is when every test's fake clock starts: on a minute boundary.
var start = time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC)

// env is one process running the ordering workflow on a real database,
// with a warehouse that outlives it (a remote service) and a fake clock.
type env struct {
	t         testing.TB
	dsn       string
	clock     *clockwork.FakeClock
	warehouse *workflow.Warehouse
	engine    *orchestration.Engine
	proc      *todolist.Processor

	mu       sync.Mutex
	failures []error // actions the processor counted as failed or parked
}

// forEachBackend runs test on SQLite, and on PostgreSQL when configured.
func forEachBackend(t *testing.T, test func(t *testing.T, backend sqldbtest.Backend)) {
	t.Helper()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			test(t, backend)
		})
	}
}

func setup(t testing.TB, backend sqldbtest.Backend) *env {
	t.Helper()
	_, dsn := backend.Open(t)
	e := &env{t: t, dsn: dsn, clock: clockwork.NewFakeClockAt(start), warehouse: workflow.NewWarehouse(map[string]int{"coffee": 10})}
	e.restart()
	return e
}

// restart starts the process again: a new database handle, engine and
// processor on the same database and warehouse, as after a crash or deploy.
func (e *env) restart() {
	t := e.t
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, e.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	e.engine, err = orchestration.New(ctx, db.DB, orchestration.WithClock(e.clock))
	require.NoError(t, err)
	require.NoError(t, workflow.Register(e.engine, e.warehouse))
	e.proc, err = e.engine.Processor(
		todolist.WithBackoff(time.Second, time.Minute),
		todolist.WithObserver(todolist.Observer{
			Failed: func(_ string, _ todolist.Item, err error) { e.fail(err) },
			Parked: func(_ string, _ todolist.Item, err error) { e.fail(err) },
		}))
	require.NoError(t, err)
}

func (e *env) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures = append(e.failures, err)
}

func (e *env) requireFailures(n int) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Len(e.t, e.failures, n, "%v", e.failures)
}

// tick works what is due now, as the processor's handler does when a
// MinuteHasPassed is published.
func (e *env) tick() {
	e.t.Helper()
	_, err := e.proc.Process(context.Background(), e.clock.Now())
	require.NoError(e.t, err)
}

// pass lets d pass a minute at a time, ticking at each minute.
func (e *env) pass(d time.Duration) {
	e.t.Helper()
	for ; d > 0; d -= time.Minute {
		e.clock.Advance(min(d, time.Minute))
		e.tick()
	}
}

// place places an order for n coffees and runs it to its Await.
func (e *env) place(id string, n int) {
	e.t.Helper()
	_, err := workflow.Place(context.Background(), e.engine, workflow.Order{
		ID: id, Items: []ordering.PricedItem{{ProductID: "coffee", Quantity: n, UnitPrice: 1250}}, Amount: ordering.Money(n) * 1250,
	})
	require.NoError(e.t, err)
	e.tick()
}

func (e *env) pay(id string) {
	e.t.Helper()
	require.NoError(e.t, workflow.Pay(context.Background(), e.engine, id, workflow.Payment{Reference: "pay-" + id, Amount: 2500}))
}

func (e *env) status(id string) orchestration.Status {
	e.t.Helper()
	st, err := e.engine.Status(context.Background(), id)
	require.NoError(e.t, err)
	return st
}
