package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
)

func TestPublishRunsHandlersInSubscriptionOrderAndEventsInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r recorder
	subscribe(t, b, record[minute](&r, "a", nil))
	subscribe(t, b, record[minute](&r, "b", nil))
	subscribe(t, b, record[day](&r, "c", nil))

	require.NoError(t, b.Publish(t.Context(), minute{1}, day{1}, minute{2}))
	require.Equal(t, []string{"a:minute1", "b:minute1", "c:day1", "a:minute2", "b:minute2"}, r.all())
}

func TestInterfaceSubscriberReceivesEveryImplementingEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r recorder
	subscribe(t, b, record[tickEvent](&r, "any-tick", nil))
	subscribe(t, b, record[minute](&r, "minutes", nil))
	subscribe(t, b, record[tickEvent](&r, "any-tick-2", nil))

	ctx := t.Context()
	require.NoError(t, b.Publish(ctx, minute{1}, day{2}))
	require.NoError(t, bus.PublishEvent(ctx, b, minute{3}))
	// Published through the interface type itself: routed by what it holds.
	require.NoError(t, bus.PublishEvent[tickEvent](ctx, b, day{4}))
	// Events that implement nothing subscribed to are nobody's.
	require.NoError(t, b.Publish(ctx, orderPlaced{ID: "o1"}))

	require.Equal(t, []string{
		"any-tick:minute1", "minutes:minute1", "any-tick-2:minute1",
		"any-tick:day2", "any-tick-2:day2",
		"any-tick:minute3", "minutes:minute3", "any-tick-2:minute3",
		"any-tick:day4", "any-tick-2:day4",
	}, r.all())
}

func TestSubscriberOfAValueTypeDoesNotReceivePointers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r recorder
	subscribe(t, b, record[minute](&r, "value", nil))
	require.NoError(t, b.Publish(t.Context(), &minute{1}))
	require.Empty(t, r.all())
}

func TestEveryHandlerRunsAndEachFailureIsReportedByName(t *testing.T) {
	t.Parallel()
	var dead []*bus.HandlerError
	b := setup(t, bus.WithDeadLetter(func(_ context.Context, err *bus.HandlerError) { dead = append(dead, err) }))
	var r recorder
	boom := errors.New("card declined")
	subscribe(t, b, record[orderPlaced](&r, "failing", boom), bus.Name("charge"))
	subscribe(t, b, func(context.Context, orderPlaced) error { panic("nil map") }, bus.Name("ship"))
	subscribe(t, b, record[orderPlaced](&r, "ok", nil), bus.Name("email"))

	for name, publish := range map[string]func() error{
		"Publish":      func() error { return b.Publish(t.Context(), orderPlaced{ID: "o1"}) },
		"PublishEvent": func() error { return bus.PublishEvent(t.Context(), b, orderPlaced{ID: "o1"}) },
	} {
		r.seen, dead = nil, nil
		err := publish()
		require.Error(t, err, name)
		require.Equal(t, []string{"failing:o1/0", "ok:o1/0"}, r.all(), "%s: every handler ran", name)

		require.ErrorIs(t, err, boom, name)
		var pe *bus.PanicError
		require.ErrorAs(t, err, &pe, name)
		require.Equal(t, "nil map", pe.Value)
		require.Contains(t, string(pe.Stack), "publish_test.go", "the stack shows where the handler panicked")

		require.Contains(t, err.Error(), `handler "charge" on bus_test.orderPlaced: card declined`)
		require.Contains(t, err.Error(), `handler "ship" on bus_test.orderPlaced: panic: nil map`)
		require.Len(t, dead, 2, "%s: both final failures went to the dead-letter callback", name)
		require.Equal(t, "charge", dead[0].Handler)
		require.Equal(t, "ship", dead[1].Handler)
		require.Equal(t, orderPlaced{ID: "o1"}, dead[1].Event)
	}
}

func onOrderPlaced(context.Context, orderPlaced) error { return errors.New("failed") }

func TestDefaultHandlerNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	named := subscribe(t, b, onOrderPlaced)
	literal := subscribe(t, b, func(context.Context, orderPlaced) error { return errors.New("failed") })
	require.Equal(t, "bus_test.onOrderPlaced", named.Name())
	require.Regexp(t, `^bus_test\.orderPlaced#\d+$`, literal.Name())

	err := b.Publish(t.Context(), orderPlaced{})
	require.Contains(t, err.Error(), `"bus_test.onOrderPlaced"`)
	require.Contains(t, err.Error(), `"`+literal.Name()+`"`)
}

func TestPublishNilEventIsReportedWithoutStoppingTheOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r recorder
	subscribe(t, b, record[minute](&r, "m", nil))
	err := b.Publish(t.Context(), minute{1}, nil, minute{2})
	require.ErrorIs(t, err, bus.ErrNilEvent)
	require.EqualError(t, err, "bus: publishing event 2 of 3: bus: nil event")
	require.Equal(t, []string{"m:minute1", "m:minute2"}, r.all())
}

func TestPublishAndSubscribeAfterCloseFail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r recorder
	subscribe(t, b, record[minute](&r, "m", nil))
	require.NoError(t, b.Close(t.Context()))
	require.NoError(t, b.Close(t.Context()), "closing twice is harmless")

	require.ErrorIs(t, b.Publish(t.Context(), minute{1}), bus.ErrClosed)
	require.ErrorIs(t, bus.PublishEvent(t.Context(), b, minute{1}), bus.ErrClosed)
	_, err := bus.Subscribe(b, record[minute](&r, "late", nil))
	require.ErrorIs(t, err, bus.ErrClosed)
	require.Empty(t, r.all())
}

func TestUnsubscribeStopsDeliveryAndIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r recorder
	a := subscribe(t, b, record[minute](&r, "a", nil))
	subscribe(t, b, record[minute](&r, "b", nil))
	require.NoError(t, b.Publish(t.Context(), minute{1}))
	a.Unsubscribe()
	a.Unsubscribe()
	require.NoError(t, b.Publish(t.Context(), minute{2}))
	require.Equal(t, []string{"a:minute1", "b:minute1", "b:minute2"}, r.all())
}

func TestUnsubscribeFromAHandlerDuringPublish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r recorder
	var second *bus.Subscription
	var first *bus.Subscription
	first = subscribe(t, b, func(ctx context.Context, m minute) error {
		r.add("first")
		first.Unsubscribe()
		second.Unsubscribe()
		return nil
	})
	second = subscribe(t, b, record[minute](&r, "second", nil))

	// The publish in progress still delivers to what it started with.
	require.NoError(t, b.Publish(t.Context(), minute{1}))
	require.NoError(t, b.Publish(t.Context(), minute{2}))
	require.Equal(t, []string{"first", "second:minute1"}, r.all())
}

func TestSubscribeAndUnsubscribeWhilePublishingConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var kept atomic.Int64
	subscribe(t, b, func(context.Context, minute) error { kept.Add(1); return nil })

	const publishers, each = 4, 500
	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			for i := range each {
				if err := bus.PublishEvent(context.Background(), b, minute{i}); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
			}
		})
	}
	var churned atomic.Int64
	for range 200 {
		sub, err := bus.Subscribe(b, func(context.Context, tickEvent) error { churned.Add(1); return nil })
		require.NoError(t, err)
		sub.Unsubscribe()
	}
	wg.Wait()
	require.Equal(t, int64(publishers*each), kept.Load(), "the stable subscription saw every event")

	after := churned.Load()
	require.NoError(t, b.Publish(t.Context(), minute{}))
	require.Equal(t, after, churned.Load(), "no unsubscribed handler runs after Unsubscribe returned")
}

func TestBadSubscriptionsAreRejectedWithTheReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := func(context.Context, orderPlaced) error { return nil }
	for name, tc := range map[string]struct {
		sub  func() (*bus.Subscription, error)
		want string
	}{
		"nil handler":  {func() (*bus.Subscription, error) { return bus.Subscribe[orderPlaced](b, nil) }, "handler is nil"},
		"nil bus":      {func() (*bus.Subscription, error) { return bus.Subscribe(nil, h) }, "bus is nil"},
		"empty name":   {func() (*bus.Subscription, error) { return bus.Subscribe(b, h, bus.Name(" ")) }, "name must not be empty"},
		"zero workers": {func() (*bus.Subscription, error) { return bus.Subscribe(b, h, bus.Async(0, 1)) }, "Async: workers must be at least 1, got 0"},
		"zero queue":   {func() (*bus.Subscription, error) { return bus.Subscribe(b, h, bus.Async(1, 0)) }, "queue size must be at least 1, got 0"},
		"nil key": {func() (*bus.Subscription, error) {
			return bus.Subscribe(b, h, bus.Async(1, 1), bus.KeyBy[orderPlaced](nil))
		}, "key function must not be nil"},
		"key not async": {func() (*bus.Subscription, error) {
			return bus.Subscribe(b, h, bus.KeyBy(func(o orderPlaced) string { return o.ID }))
		}, "KeyBy needs Async"},
		"key wrong type": {func() (*bus.Subscription, error) {
			return bus.Subscribe(b, h, bus.Async(1, 1), bus.KeyBy(func(m minute) string { return "" }))
		}, "KeyBy takes a bus_test.minute, not a bus_test.orderPlaced"},
		"nil middleware": {func() (*bus.Subscription, error) { return bus.Subscribe(b, h, bus.Use(nil)) }, "middleware 0 is nil"},
		"nil option":     {func() (*bus.Subscription, error) { return bus.Subscribe(b, h, nil) }, "nil option"},
	} {
		sub, err := tc.sub()
		require.ErrorContains(t, err, tc.want, name)
		require.True(t, strings.HasPrefix(err.Error(), "bus: Subscribe[bus_test.orderPlaced]: "), "%s: %v", name, err)
		require.Nil(t, sub, name)
	}
}

func TestBadOptionsAreRejectedByNew(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		opt  bus.Option
		want string
	}{
		"nil clock":       {bus.WithClock(nil), "clock must not be nil"},
		"nil logger":      {bus.WithLogger(nil), "logger must not be nil"},
		"nil observer":    {bus.WithObserver(nil), "observer must not be nil"},
		"nil dead letter": {bus.WithDeadLetter(nil), "callback must not be nil"},
		"nil middleware":  {bus.WithMiddleware(bus.Logging(nil), nil), "middleware 1 is nil"},
		"nil option":      {nil, "nil option"},
	} {
		b, err := bus.New(tc.opt)
		require.ErrorContains(t, err, tc.want, name)
		require.True(t, strings.HasPrefix(err.Error(), "bus: "), "%s: %v", name, err)
		require.Nil(t, b, name)
	}
}

func TestPublishEventToSubscribersOfAny(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r recorder
	subscribe(t, b, func(_ context.Context, e any) error { r.add(fmtEvent(e)); return nil })
	require.NoError(t, bus.PublishEvent(t.Context(), b, minute{1}))
	require.NoError(t, b.Publish(t.Context(), day{2}))
	require.Equal(t, []string{"minute1", "day2"}, r.all())
}
