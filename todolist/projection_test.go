package todolist_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

type orderInitiated struct {
	OrderID      string
	TimeoutAfter time.Time
}

type orderCompleted struct{ OrderID string }

type orderCancelled struct{ OrderID string }

// pendingOrders is the seed's PendingOrdersProjection.
func pendingOrders(l *todolist.List) *todolist.Projection {
	p := todolist.NewProjection(l)
	todolist.AddOn(p, func(e orderInitiated) (string, time.Time) { return e.OrderID, e.TimeoutAfter })
	todolist.RemoveOn(p, func(e orderCompleted) string { return e.OrderID })
	todolist.RemoveOn(p, func(e orderCancelled) string { return e.OrderID })
	return p
}

// snapshot is everything the list holds.
func snapshot(t *testing.T, l *todolist.List) []todolist.Item {
	t.Helper()
	ctx := context.Background()
	pending, err := l.Due(ctx, t0.Add(24*time.Hour), 1000)
	require.NoError(t, err)
	parked, err := l.Parked(ctx, 1000)
	require.NoError(t, err)
	return append(pending, parked...)
}

func TestProjectionReplayIsIdempotent(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "pending-orders")
		p := pendingOrders(l)
		history := []any{
			orderInitiated{"o1", t0.Add(15 * time.Minute)},
			orderInitiated{"o2", t0.Add(16 * time.Minute)},
			"an event no rule is about",
			orderCompleted{"o1"},
			orderInitiated{"o3", t0.Add(17 * time.Minute)},
			orderCancelled{"o3"},
			orderInitiated{"o4", t0.Add(-time.Minute)},
		}
		require.NoError(t, p.Apply(ctx, db, history...))
		// o4 fails once: its bookkeeping must survive the replay.
		_, err := newProcessor(t, l, clockwork.NewFakeClockAt(t0), fail).Process(ctx, t0)
		require.NoError(t, err)
		once := snapshot(t, l)
		require.Equal(t, []string{"o4", "o2"}, ids(once))
		require.Equal(t, 1, once[0].Attempts)

		require.NoError(t, p.Apply(ctx, db, history...))
		require.Equal(t, once, snapshot(t, l), "replaying the history changes nothing")
		for _, e := range history {
			require.NoError(t, p.Apply(ctx, db, e))
		}
		require.Equal(t, once, snapshot(t, l), "nor does replaying it event by event")
	})
}

func TestProjectionInARolledBackTransactionLeavesNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "pending-orders")
		p := pendingOrders(l)
		require.NoError(t, p.Apply(ctx, db, orderInitiated{"o1", t0}))

		tx, err := db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, p.Apply(ctx, tx, orderInitiated{"o2", t0}, orderCompleted{"o1"}))
		require.NoError(t, tx.Rollback())
		require.Equal(t, []string{"o1"}, ids(snapshot(t, l)))
	})
}

func TestProjectionReportsBadRulesAndEvents(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	l := openList(t, db, "pending-orders")

	p := todolist.NewProjection(l)
	todolist.AddOn[orderInitiated](p, nil)
	require.ErrorContains(t, p.Apply(ctx, db, orderInitiated{"o1", t0}), "AddOn[todolist_test.orderInitiated]: nil item function")
	q := todolist.NewProjection(l)
	todolist.RemoveOn[orderCompleted](q, nil)
	b := newBus(t)
	_, err := q.Subscribe(b)
	require.ErrorContains(t, err, "RemoveOn[todolist_test.orderCompleted]: nil id function")
	require.ErrorIs(t, todolist.NewProjection(nil).Apply(ctx, db), todolist.ErrNilList)
	require.ErrorIs(t, pendingOrders(l).Apply(ctx, nil), todolist.ErrInvalidArgument)
	_, err = pendingOrders(l).Subscribe(nil)
	require.ErrorIs(t, err, todolist.ErrInvalidArgument)

	err = pendingOrders(l).Apply(ctx, db, orderInitiated{OrderID: "o1"})
	require.ErrorIs(t, err, todolist.ErrInvalidTime)
	require.ErrorContains(t, err, "todolist_test.orderInitiated")
}

func TestProjectionSubscribedToABus(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "pending-orders")
		b := newBus(t)
		subs, err := pendingOrders(l).Subscribe(b)
		require.NoError(t, err)
		require.Len(t, subs, 3)

		require.NoError(t, b.Publish(ctx, orderInitiated{"o1", t0}, orderInitiated{"o2", t0}, orderCancelled{"o1"}))
		require.Equal(t, []string{"o2"}, ids(snapshot(t, l)))

		err = b.Publish(ctx, orderCompleted{""})
		require.ErrorIs(t, err, todolist.ErrInvalidID, "a failure reaches the publisher")

		for _, s := range subs {
			s.Unsubscribe()
		}
		require.NoError(t, b.Publish(ctx, orderCompleted{"o2"}))
		require.Equal(t, []string{"o2"}, ids(snapshot(t, l)), "unsubscribed")
	})
}

func newBus(t *testing.T) *bus.Bus {
	t.Helper()
	b, err := bus.New()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close(context.Background())) })
	return b
}

// Applying many events at once, which removes each run of removals in a
// statement or two, leaves the list as applying them one by one does.
func TestProjectionAppliesManyEventsAsOneByOne(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		one, many := openList(t, db, "one-by-one"), openList(t, db, "at-once")
		var history []any
		for i := range 60 {
			id := fmt.Sprintf("o%02d", i%20)
			switch i % 7 {
			case 0, 3:
				history = append(history, orderInitiated{id, t0.Add(time.Duration(i) * time.Minute)})
			case 1, 4, 5:
				history = append(history, orderCancelled{id})
			case 2:
				history = append(history, orderCompleted{id})
			default:
				history = append(history, "ignored")
			}
		}
		for _, e := range history {
			require.NoError(t, pendingOrders(one).Apply(ctx, db, e))
		}
		require.NoError(t, pendingOrders(many).Apply(ctx, db, history...))
		require.NotEmpty(t, snapshot(t, one))
		require.Equal(t, snapshot(t, one), snapshot(t, many))

		err := pendingOrders(many).Apply(ctx, db, orderCancelled{"o01"}, orderCompleted{""})
		require.ErrorIs(t, err, todolist.ErrInvalidID)
		require.ErrorContains(t, err, "todolist_test.orderCompleted")
	})
}
