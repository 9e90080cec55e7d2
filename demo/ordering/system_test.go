package ordering_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/demo/ordering"
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

// A subscriber failing to take the order events does not undo them: each
// command that committed returns no error, so a client never retries a
// payment that was recorded; the failures are counted and logged.
func TestCommandsCommittedButNotPublishedSucceed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		ctx := context.Background()
		db, _ := backend.Open(t)
		var logs bytes.Buffer // written by the commands, in this goroutine
		sys, err := ordering.Open(ctx, db.DB, ordering.Config{
			Clock:  clockwork.NewFakeClockAt(start),
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, sys.Close(context.Background())) })
		emailDown := errors.New("email service down")
		subscribeFailing[ordering.OrderInitiated](t, sys, emailDown)
		subscribeFailing[ordering.OrderPaymentRecorded](t, sys, emailDown)
		subscribeFailing[ordering.OrderCompleted](t, sys, emailDown)
		subscribeFailing[ordering.OrderCancelled](t, sys, emailDown)

		ids, err := sys.PlaceAll(ctx, []ordering.NewOrder{
			{ClientID: "ada", Items: cart, Timeout: time.Hour},
			{ClientID: "bob", Items: cart, Timeout: time.Hour},
		})
		require.NoError(t, err)
		paying, cancelling := ids[0], ids[1]
		o, err := sys.Pay(ctx, paying, 400)
		require.NoError(t, err, "the payment is recorded: nothing for the client to retry")
		require.Equal(t, ordering.Money(400), o.Paid)
		o, err = sys.Pay(ctx, paying, o.Total-o.Paid)
		require.NoError(t, err)
		require.Equal(t, ordering.StatusPaid, o.Status)
		_, err = sys.Complete(ctx, paying)
		require.NoError(t, err)
		_, err = sys.Cancel(ctx, cancelling, "changed my mind")
		require.NoError(t, err)

		o, err = sys.Order(ctx, paying)
		require.NoError(t, err)
		require.Equal(t, ordering.StatusCompleted, o.Status)
		require.Equal(t, o.Total, o.Paid, "each payment recorded once")
		require.Len(t, events(t, sys, paying), 4)
		require.Len(t, events(t, sys, cancelling), 2)
		require.Equal(t, ordering.Stats{Unpublished: 5}, sys.Stats(), "place (one batch), pay twice, complete, cancel")
		require.Contains(t, logs.String(), "command=pay order="+paying)
		require.Contains(t, logs.String(), "email service down")
	})
}

func subscribeFailing[E any](t *testing.T, sys *ordering.System, err error) {
	t.Helper()
	_, serr := bus.Subscribe(sys.Bus(), func(context.Context, E) error { return err })
	require.NoError(t, serr)
}

// A paid order is owed its delivery: cancelling it is refused until it is
// refunded, which the example leaves out.
func TestCancellingAPaidOrderIsRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		ctx := context.Background()
		e := setup(t, backend)
		id := e.place(t, 10*time.Minute)
		o, err := e.sys.Pay(ctx, id, 2500)
		require.NoError(t, err)
		require.Equal(t, ordering.StatusPaid, o.Status)

		o, err = e.sys.Cancel(ctx, id, "changed my mind")
		require.ErrorIs(t, err, ordering.ErrOrderPaid)
		require.ErrorContains(t, err, "cancel order "+id)
		require.Equal(t, ordering.StatusPaid, o.Status)
		require.Len(t, e.events(t, id), 2, "nothing appended")
		_, err = e.sys.Complete(ctx, id)
		require.NoError(t, err, "the paid order can still be completed")
	})
}
