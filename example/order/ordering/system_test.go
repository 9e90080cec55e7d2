package ordering_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/example/order/ordering"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

func TestSystemCommandsNameTheOrderInTheirErrors(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		ctx := context.Background()
		e := setup(t, backend)

		_, err := e.sys.Place(ctx, ordering.NewOrder{ClientID: "ada", Timeout: time.Minute})
		require.ErrorIs(t, err, ordering.ErrInvalidOrder)
		require.ErrorContains(t, err, "no items")
		_, err = e.sys.PlaceAll(ctx, []ordering.NewOrder{
			{ClientID: "ada", Items: cart, Timeout: time.Minute},
			{ClientID: "bob", Items: cart},
		})
		require.ErrorContains(t, err, "place order 1")
		stats, err := e.sys.Pending().Stats(ctx, e.clock.Now())
		require.NoError(t, err)
		require.Zero(t, stats.Pending, "a bad order in a batch places none of it")

		_, err = e.sys.Pay(ctx, "nope", 100)
		require.ErrorIs(t, err, ordering.ErrOrderNotFound)
		require.ErrorContains(t, err, "pay order nope")
		_, err = e.sys.Cancel(ctx, "nope", "why not")
		require.ErrorIs(t, err, ordering.ErrOrderNotFound)
		_, err = e.sys.Order(ctx, "nope")
		require.ErrorIs(t, err, ordering.ErrOrderNotFound)

		id := e.place(t, 10*time.Minute)
		o, err := e.sys.Cancel(ctx, id, "changed my mind")
		require.NoError(t, err)
		require.Equal(t, ordering.StatusCancelled, o.Status)
		require.False(t, e.onList(t, id))
		again, err := e.sys.Cancel(ctx, id, "twice")
		require.NoError(t, err)
		require.Equal(t, "changed my mind", again.CancelReason, "a closed order stays as it is")
		_, err = e.sys.Pay(ctx, id, 100)
		require.ErrorIs(t, err, ordering.ErrOrderClosed)
		require.Len(t, e.events(t, id), 2)
	})
}

func TestOpenRejectsANilDatabase(t *testing.T) {
	t.Parallel()
	_, err := ordering.Open(context.Background(), nil, ordering.Config{})
	require.ErrorIs(t, err, ordering.ErrInvalidConfig)
	_, err = ordering.HandleCancelOrder(nil, nil, nil)
	require.ErrorIs(t, err, ordering.ErrInvalidConfig)
}
