package ordering_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/tick"
)

// heard is what a subscriber could read of an order when it heard of its
// cancellation.
type heard struct {
	status ordering.Status
	onList bool
}

// A batch's cancellations, the removal of their to-do items and the
// batch's outcomes commit together, and the cancellations are published
// only once committed: a subscriber hearing of one reads it from the
// database, and a batch whose commit fails publishes nothing, counts
// nothing and leaves its orders due, to be cancelled at the next tick.
func TestABatchPublishesItsCancellationsOnlyOnceCommitted(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		ctx := context.Background()
		e := setup(t, backend)
		var ids []string
		for range 3 {
			ids = append(ids, e.place(t, 2*time.Minute))
		}
		// Time passes by hand from here: the ticker would retry the
		// failing minute on its own.
		require.NoError(t, e.ticker.Stop(ctx))
		e.clock.Advance(3 * time.Minute)
		minute := tick.MinuteHasPassed{Passage: tick.Passage{At: start.Add(3 * time.Minute)}}

		var mu sync.Mutex
		seen := make(map[string]heard)
		sub, err := bus.Subscribe(e.sys.Bus(), func(ctx context.Context, c ordering.OrderCancelled) error {
			o, err := e.sys.Order(ctx, c.OrderID)
			if err != nil {
				return err
			}
			_, err = e.sys.Pending().Get(ctx, c.OrderID)
			mu.Lock()
			defer mu.Unlock()
			seen[c.OrderID] = heard{status: o.Status, onList: err == nil}
			return nil
		})
		require.NoError(t, err)
		defer sub.Unsubscribe()

		refuse := refuseCancellationsAtCommit(t, e.db, backend)
		require.Error(t, e.sys.Bus().Publish(ctx, minute), "the batch's commit fails")
		mu.Lock()
		require.Empty(t, seen, "nothing is published of a batch that did not commit")
		mu.Unlock()
		for _, id := range ids {
			require.Len(t, e.events(t, id), 1, "no cancellation of %s was stored", id)
			require.True(t, e.onList(t, id), "%s stays due", id)
		}
		require.Equal(t, ordering.Stats{}, e.sys.Stats(), "nothing is counted of a batch that did not commit")

		refuse()
		require.NoError(t, e.sys.Bus().Publish(ctx, minute))
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, seen, len(ids))
		for _, id := range ids {
			require.Equal(t, heard{status: ordering.StatusCancelled}, seen[id], "when %s's cancellation was published, it and the removal of its to-do item were committed", id)
			require.Len(t, e.events(t, id), 2)
		}
		require.Equal(t, ordering.Stats{TimedOut: int64(len(ids))}, e.sys.Stats())
		e.requireNoFailures(t)
	})
}

// refuseCancellationsAtCommit makes every commit that stored an order's
// cancellation fail, at the commit itself (a deferred constraint), and
// returns the function that lifts the refusal.
func refuseCancellationsAtCommit(t *testing.T, db *sqldb.DB, backend sqldbtest.Backend) (lift func()) {
	t.Helper()
	ctx := context.Background()
	statements := []string{
		`CREATE TABLE refusal (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE refused (refusal INTEGER REFERENCES refusal (id) DEFERRABLE INITIALLY DEFERRED)`,
		`CREATE TRIGGER refuse_cancellations AFTER INSERT ON eventstore_events
WHEN NEW.type = '` + ordering.EventOrderCancelled + `' BEGIN INSERT INTO refused VALUES (1); END`,
	}
	if backend.Name != "sqlite" {
		statements = []string{
			`CREATE FUNCTION refuse_cancellations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'cancellations refused'; END $$`,
			`CREATE CONSTRAINT TRIGGER refuse_cancellations AFTER INSERT ON eventstore_events
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
WHEN (NEW.type = '` + ordering.EventOrderCancelled + `') EXECUTE FUNCTION refuse_cancellations()`,
		}
	}
	for _, s := range statements {
		_, err := db.ExecContext(ctx, s)
		require.NoError(t, err)
	}
	return func() {
		drop := `DROP TRIGGER refuse_cancellations`
		if backend.Name != "sqlite" {
			drop += ` ON eventstore_events`
		}
		_, err := db.ExecContext(ctx, drop)
		require.NoError(t, err)
	}
}

// A client cancels an order while a batch that holds the order's to-do
// item is deciding it: the client's append takes the order's turn, then
// waits for the item, which its projection removes and the batch holds
// until it commits. The batch must not wait for the turn in return — a
// deadlock, which PostgreSQL ends after a second by failing one of the
// two — so it leaves that order to the next tick: the client's
// cancellation stands, the batch's other orders time out, nothing fails.
// PostgreSQL only: on SQLite the client waits for the batch's write lock
// before it takes anything.
func TestClientCancellingDuringABatchNeitherWaitsForItNorFails(t *testing.T) {
	t.Parallel()
	e := setup(t, sqldbtest.Backend{Name: "postgres", Open: sqldbtest.Postgres})
	var ids []string
	for range 3 {
		ids = append(ids, e.place(t, 2*time.Minute))
	}
	racing := ids[1]
	cancelled := make(chan error, 1)
	started := false
	ordering.SetBeforeDecide(e.sys, func(ctx context.Context, orderID string) error {
		if orderID != racing || started {
			return nil
		}
		started = true
		go func() {
			_, err := e.sys.Cancel(context.Background(), orderID, "changed my mind")
			cancelled <- err
		}()
		return waitForItemLockWaiter(ctx, e.db)
	})

	e.pass(t, 2*time.Minute) // the orders are due at 09:02
	select {
	case err := <-cancelled:
		require.NoError(t, err, "the client's cancellation stands")
	case <-time.After(10 * time.Second):
		t.Fatal("the client's cancellation is still waiting")
	}
	// Only now the next tick: one that came before the client's commit
	// would find the order busy again, and count its attempts too.
	e.pass(t, time.Minute)

	_, byClient := closings(e.events(t, racing))
	require.Len(t, byClient, 1)
	require.Equal(t, "changed my mind", byClient[0].Reason)
	require.Len(t, e.events(t, racing), 2)
	require.False(t, e.onList(t, racing))
	for _, id := range ids {
		if id != racing {
			o, err := e.sys.Order(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, ordering.StatusCancelled, o.Status, id)
			require.False(t, e.onList(t, id))
		}
	}
	// The racing order was tried at each of the batch's four attempts,
	// then left to the next tick, by which the client had cancelled it.
	require.Equal(t, ordering.Stats{TimedOut: 2, Conflicts: 4}, e.sys.Stats())
	e.requireNoFailures(t)
}

// waitForItemLockWaiter returns once a transaction waits for a row of
// db's to-do items, which only a transaction holding rows of a batch can
// make it do.
func waitForItemLockWaiter(ctx context.Context, db *sqldb.DB) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var waiting bool
		// A transaction waiting for a row holds the row's tuple lock
		// while it waits for the transaction holding the row.
		err := db.GetContext(ctx, &waiting, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'tuple' AND relation = 'todolist_items'::regclass)`)
		if err != nil || waiting {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.New("no one waits for a to-do item")
		case <-time.After(time.Millisecond):
		}
	}
}

// On a pool of one connection (SQLite's ":memory:"), the batch reads the
// orders in its own transaction: on another connection it would wait for
// the pool's only one for ever.
func TestBatchTimesOutOrdersOnAPoolOfOneConnection(t *testing.T) {
	t.Parallel()
	memory := sqldbtest.Backend{Name: "sqlite", Open: func(t testing.TB) (*sqldb.DB, string) {
		db, err := sqldb.Open(context.Background(), ":memory:")
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db, ":memory:"
	}}
	e := setup(t, memory)
	id := e.place(t, 2*time.Minute)
	e.pass(t, 3*time.Minute)
	o, err := e.sys.Order(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, ordering.StatusCancelled, o.Status)
	require.False(t, e.onList(t, id))
	require.Equal(t, ordering.Stats{TimedOut: 1}, e.sys.Stats())
	e.requireNoFailures(t)
}
