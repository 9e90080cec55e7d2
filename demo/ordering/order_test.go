package ordering_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/demo/ordering"
)

var cart = []ordering.PricedItem{
	{ProductID: "coffee", Quantity: 2, UnitPrice: 1250},
	{ProductID: "mug", Quantity: 1, UnitPrice: 900},
}

func initiated(t *testing.T) ordering.Order {
	t.Helper()
	events, err := ordering.Initiate("o-1", "c-1", cart, start, 15*time.Minute)
	require.NoError(t, err)
	return ordering.Fold(events...)
}

func TestInitiatePricesTheCartAndSetsTheDeadline(t *testing.T) {
	t.Parallel()
	events, err := ordering.Initiate("o-1", "c-1", cart, start, 15*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []any{ordering.OrderInitiated{
		OrderID: "o-1", ClientID: "c-1", Items: cart, Total: 3400,
		InitiatedAt: start, TimeoutAfter: start.Add(15 * time.Minute),
	}}, events)
	o := ordering.Fold(events...)
	require.Equal(t, ordering.StatusAwaitingPayment, o.Status)
	require.Equal(t, "34.00", o.Total.String())
}

func TestInitiateRejectsBadOrdersNamingTheProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, id, client string
		items            []ordering.PricedItem
		timeout          time.Duration
		want             string
	}{
		{"no id", "", "c", cart, time.Minute, "order ID is empty"},
		{"no client", "o", "", cart, time.Minute, "client ID is empty"},
		{"no items", "o", "c", nil, time.Minute, "no items"},
		{"no timeout", "o", "c", cart, 0, "timeout must be positive"},
		{"no product", "o", "c", []ordering.PricedItem{{Quantity: 1}}, time.Minute, "item 0 has no product ID"},
		{"no quantity", "o", "c", []ordering.PricedItem{{ProductID: "tea"}}, time.Minute, "item 0 (tea): quantity must be positive"},
		{"negative price", "o", "c", []ordering.PricedItem{{ProductID: "tea", Quantity: 1, UnitPrice: -1}}, time.Minute, "negative price -0.01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ordering.Initiate(tc.id, tc.client, tc.items, start, tc.timeout)
			require.ErrorIs(t, err, ordering.ErrInvalidOrder)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestPaymentsAddUpToPaidAndCompletionNeedsThem(t *testing.T) {
	t.Parallel()
	o := initiated(t)
	_, err := o.Complete(start)
	require.ErrorIs(t, err, ordering.ErrNotPaid)

	for _, amount := range []ordering.Money{0, -5, 3401} {
		_, err := o.RecordPayment(amount, start)
		require.ErrorIs(t, err, ordering.ErrInvalidPayment, "amount %s", amount)
	}
	events, err := o.RecordPayment(1000, start)
	require.NoError(t, err)
	o = ordering.Evolve(o, events[0])
	require.Equal(t, ordering.StatusAwaitingPayment, o.Status, "partly paid")
	events, err = o.RecordPayment(2400, start)
	require.NoError(t, err)
	o = ordering.Evolve(o, events[0])
	require.Equal(t, ordering.StatusPaid, o.Status)

	events, err = o.Complete(start.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, []any{ordering.OrderCompleted{OrderID: "o-1", CompletedAt: start.Add(time.Minute)}}, events)
	o = ordering.Evolve(o, events[0])
	require.True(t, o.Closed())
	again, err := o.Complete(start)
	require.NoError(t, err)
	require.Empty(t, again, "completing twice decides nothing")
	_, err = o.RecordPayment(1, start)
	require.ErrorIs(t, err, ordering.ErrOrderClosed)
}

func TestCancelDecidesNothingOnAClosedOrder(t *testing.T) {
	t.Parallel()
	o := initiated(t)
	events, err := o.Cancel("client changed their mind", start)
	require.NoError(t, err)
	require.Equal(t, []any{ordering.OrderCancelled{OrderID: "o-1", Reason: "client changed their mind", CancelledAt: start}}, events)
	cancelled := ordering.Evolve(o, events[0])
	require.Equal(t, ordering.StatusCancelled, cancelled.Status)
	requireCancelDecidesNothing(t, cancelled)
	_, err = cancelled.RecordPayment(100, start)
	require.ErrorIs(t, err, ordering.ErrOrderClosed)
	_, err = cancelled.Complete(start)
	require.ErrorIs(t, err, ordering.ErrOrderClosed)

	completed := ordering.Fold(
		ordering.OrderInitiated{OrderID: "o-2", Total: 100, TimeoutAfter: start},
		ordering.OrderPaymentRecorded{OrderID: "o-2", Amount: 100},
		ordering.OrderCompleted{OrderID: "o-2"},
	)
	requireCancelDecidesNothing(t, completed)
	requireCancelDecidesNothing(t, ordering.Order{})
}

func requireCancelDecidesNothing(t *testing.T, o ordering.Order) {
	t.Helper()
	events, err := o.Cancel("again", start)
	require.NoError(t, err)
	require.Empty(t, events)
}

// A paid order would need a refund, so cancelling it is refused; an order
// paid in part is still cancelled.
func TestCancelRefusesAPaidOrder(t *testing.T) {
	t.Parallel()
	o := ordering.Fold(
		ordering.OrderInitiated{OrderID: "o-3", Total: 100, TimeoutAfter: start},
		ordering.OrderPaymentRecorded{OrderID: "o-3", Amount: 40},
	)
	events, err := o.Cancel("changed my mind", start)
	require.NoError(t, err)
	require.Len(t, events, 1)

	paid := ordering.Evolve(o, ordering.OrderPaymentRecorded{OrderID: "o-3", Amount: 60})
	events, err = paid.Cancel("changed my mind", start)
	require.ErrorIs(t, err, ordering.ErrOrderPaid)
	require.ErrorContains(t, err, "order o-3: 1.00 paid")
	require.Empty(t, events)
}

func TestTimeOutCancelsOnlyAnUnpaidOrderPastItsDeadline(t *testing.T) {
	t.Parallel()
	o := initiated(t)
	deadline := o.TimeoutAfter
	require.Empty(t, o.TimeOut(deadline.Add(-time.Nanosecond)), "before the deadline")
	require.Equal(t, []any{ordering.OrderCancelled{OrderID: "o-1", Reason: ordering.ReasonTimedOut, CancelledAt: deadline}}, o.TimeOut(deadline))

	events, err := o.RecordPayment(o.Total, start)
	require.NoError(t, err)
	require.Empty(t, ordering.Evolve(o, events[0]).TimeOut(deadline.Add(time.Hour)), "paid")
}
