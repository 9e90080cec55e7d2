package ordering_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// start is when every test's fake clock starts: on a minute boundary.
var start = time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC)

// env is an ordering System on a real database and bus, with a real ticker on
// a fake clock.
type env struct {
	db      *sqldb.DB
	clock   *clockwork.FakeClock
	sys     *ordering.System
	cursors *tick.SQLStore
	ticker  *tick.Ticker

	mu       sync.Mutex
	failures []error // actions the processor counted as failed or parked
}

func setup(t testing.TB, backend sqldbtest.Backend) *env {
	t.Helper()
	return setupWith(t, backend, ordering.Config{})
}

// setupWith is setup with cfg's PerOrderTimeouts.
func setupWith(t testing.TB, backend sqldbtest.Backend, cfg ordering.Config) *env {
	t.Helper()
	ctx := context.Background()
	db, _ := backend.Open(t)
	e := &env{db: db, clock: clockwork.NewFakeClockAt(start)}
	observer := todolist.Observer{
		Failed: func(_ string, _ todolist.Item, err error) { e.fail(err) },
		Parked: func(_ string, _ todolist.Item, err error) { e.fail(err) },
	}
	sys, err := ordering.Open(ctx, db.DB, ordering.Config{
		Clock:            e.clock,
		Processor:        []todolist.ProcessorOption{todolist.WithObserver(observer)},
		PerOrderTimeouts: cfg.PerOrderTimeouts,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sys.Close(context.Background())) })
	e.sys = sys
	e.cursors, err = tick.NewSQLStore(ctx, db.DB)
	require.NoError(t, err)
	e.startTicker(t)
	return e
}

func (e *env) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures = append(e.failures, err)
}

// requireNoFailures checks that no error surfaced anywhere: no action failed
// or was parked, and the ticker never failed to publish (a synchronous
// handler's error would fail the publish).
func (e *env) requireNoFailures(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Empty(t, e.failures)
	require.Zero(t, e.ticker.Stats().PublishFailures)
}

// startTicker starts a minute ticker on the env's cursors, as a process
// starting up would.
func (e *env) startTicker(t testing.TB, opts ...tick.Option) {
	t.Helper()
	opts = append([]tick.Option{tick.WithClock(e.clock), tick.WithUnits(tick.Minute)}, opts...)
	ticker, err := tick.New(e.sys.Bus(), e.cursors, opts...)
	require.NoError(t, err)
	require.NoError(t, ticker.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, ticker.Stop(context.Background())) })
	e.ticker = ticker
}

// pass lets d pass a minute at a time, returning once the ticker emitted
// every boundary and the handlers ran.
func (e *env) pass(t testing.TB, d time.Duration) {
	t.Helper()
	for ; d > 0; d -= time.Minute {
		require.NoError(t, tick.AdvanceAndWait(context.Background(), e.clock, min(d, time.Minute), e.ticker))
	}
}

func (e *env) place(t testing.TB, timeout time.Duration) string {
	t.Helper()
	id, err := e.sys.Place(context.Background(), ordering.NewOrder{
		ClientID: "client-1",
		Items:    []ordering.PricedItem{{ProductID: "coffee", Quantity: 2, UnitPrice: 1250}},
		Timeout:  timeout,
	})
	require.NoError(t, err)
	return id
}

func (e *env) payAndComplete(t testing.TB, id string) {
	t.Helper()
	require.NoError(t, payAndComplete(context.Background(), e.sys, id))
}

func payAndComplete(ctx context.Context, sys *ordering.System, id string) error {
	o, err := sys.Order(ctx, id)
	if err != nil {
		return err
	}
	if _, err := sys.Pay(ctx, id, o.Total-o.Paid); err != nil {
		return err
	}
	_, err = sys.Complete(ctx, id)
	return err
}

// events reads the order's stream from the event store.
func (e *env) events(t testing.TB, id string) []any {
	t.Helper()
	return events(t, e.sys, id)
}

func events(t testing.TB, sys *ordering.System, id string) []any {
	t.Helper()
	recorded, err := sys.Store().Load(context.Background(), ordering.StreamOf(id), 0)
	require.NoError(t, err)
	out := make([]any, len(recorded))
	for i, r := range recorded {
		out[i] = r.Event
	}
	return out
}

// closings returns the completions and cancellations among events.
func closings(events []any) (completed []ordering.OrderCompleted, cancelled []ordering.OrderCancelled) {
	for _, e := range events {
		switch e := e.(type) {
		case ordering.OrderCompleted:
			completed = append(completed, e)
		case ordering.OrderCancelled:
			cancelled = append(cancelled, e)
		}
	}
	return completed, cancelled
}

func (e *env) onList(t testing.TB, id string) bool {
	t.Helper()
	_, err := e.sys.Pending().Get(context.Background(), id)
	if err != nil {
		require.ErrorIs(t, err, todolist.ErrNotFound)
		return false
	}
	return true
}
