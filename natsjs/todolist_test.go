package natsjs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// A service that runs no ticker subscribes its to-do list's processor to
// the minutes exactly as it would beside a ticker of its own:
// todolist.Handle[tick.MinuteHasPassed], unchanged, on the bus a Consumer
// publishes to.
func TestATodoListIsWorkedByMinutesFromTheStream(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	ctx := context.Background()
	_, js := connect(t, url)
	ensure(t, js, n)

	db, _ := sqldbtest.SQLite(t)
	pending, err := todolist.Open(ctx, db.DB, "pending-orders")
	require.NoError(t, err)
	require.NoError(t, pending.Add(ctx, "order-1", minute(2).Add(-30*time.Second)))
	require.NoError(t, pending.Add(ctx, "order-2", minute(4)))
	require.NoError(t, pending.Add(ctx, "order-3", minute(9)))
	var mu sync.Mutex
	cancelled := map[string]time.Time{}
	cancelOrder := func(ctx context.Context, item todolist.Item) error {
		mu.Lock()
		defer mu.Unlock()
		cancelled[item.ID] = item.Due
		return nil
	}
	clock := clockwork.NewFakeClockAt(minute(5).Add(time.Second))
	handler, err := todolist.Handle[tick.MinuteHasPassed](pending, cancelOrder, todolist.WithClock(clock))
	require.NoError(t, err)
	b := newBus(t)
	_, err = bus.Subscribe(b, handler)
	require.NoError(t, err)

	publishMinutes(t, js, n.prefix, 1, 5)
	c := startConsumer(t, js, n.prefix, "orders", b)
	waitUntil(t, "five minutes are handled", func() bool { return c.Stats().Handled == 5 })

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]time.Time{
		"order-1": minute(2).Add(-30 * time.Second),
		"order-2": minute(4),
	}, cancelled, "the items due by 12:05, and not order-3")
	_, err = pending.Get(ctx, "order-3")
	require.NoError(t, err, "order-3 is still pending")
	_, err = pending.Get(ctx, "order-1")
	require.Error(t, err, "order-1 left the list")
}
