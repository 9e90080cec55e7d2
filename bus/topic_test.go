package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
)

type topicEvent struct{ N int }

// A Topic taken before any subscription follows the bus: it reaches what
// is subscribed after it, stops reaching what is unsubscribed, and says
// ErrClosed after Close.
func TestATopicFollowsSubscriptionsAndClose(t *testing.T) {
	ctx := context.Background()
	b, err := bus.New()
	require.NoError(t, err)
	topic := bus.TopicOf[topicEvent](b)

	var got []string
	sub := func(name string) *bus.Subscription {
		s, err := bus.Subscribe(b, func(_ context.Context, e topicEvent) error {
			got = append(got, fmt.Sprintf("%s%d", name, e.N))
			return nil
		})
		require.NoError(t, err)
		return s
	}
	// Twice after each change: the first publish finds the route, the
	// second reuses it.
	twice := func(n int) {
		require.NoError(t, topic.Publish(ctx, topicEvent{N: n}))
		require.NoError(t, topic.Publish(ctx, topicEvent{N: n}))
	}
	twice(1)
	a := sub("a")
	twice(2)
	sub("b")
	twice(3)
	a.Unsubscribe()
	twice(4)
	require.Equal(t, []string{"a2", "a2", "a3", "b3", "a3", "b3", "b4", "b4"}, got)

	// Another type's first publish replaces the snapshot too.
	require.NoError(t, bus.PublishEvent(ctx, b, struct{}{}))
	twice(5)
	require.Equal(t, []string{"a2", "a2", "a3", "b3", "a3", "b3", "b4", "b4", "b5", "b5"}, got)

	require.NoError(t, b.Close(ctx))
	require.ErrorIs(t, topic.Publish(ctx, topicEvent{N: 6}), bus.ErrClosed)
	require.Len(t, got, 10)
}

// A Topic keeps Publish's guarantees: every handler runs whatever the
// others do, each failure and panic is named in the joined error, and
// middleware and the observer see the event.
func TestATopicKeepsPublishGuarantees(t *testing.T) {
	ctx := context.Background()
	obs := &tallyObserver{}
	var wrapped atomic.Int64
	mw := func(next bus.Handler) bus.Handler {
		return func(ctx context.Context, e any) error { wrapped.Add(1); return next(ctx, e) }
	}
	b, err := bus.New(bus.WithObserver(obs))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close(ctx)) })
	boom := errors.New("boom")
	var last int
	_, err = bus.Subscribe(b, func(context.Context, topicEvent) error { return boom }, bus.Name("fails"))
	require.NoError(t, err)
	_, err = bus.Subscribe(b, func(context.Context, topicEvent) error { panic("oops") }, bus.Name("panics"))
	require.NoError(t, err)
	_, err = bus.Subscribe(b, func(_ context.Context, e topicEvent) error { last = e.N; return nil }, bus.Name("runs"), bus.Use(mw))
	require.NoError(t, err)

	err = bus.TopicOf[topicEvent](b).Publish(ctx, topicEvent{N: 7})
	require.ErrorIs(t, err, boom)
	var perr *bus.PanicError
	require.ErrorAs(t, err, &perr)
	require.ErrorContains(t, err, "fails")
	require.ErrorContains(t, err, "panics")
	require.Equal(t, 7, last, "the handler after the failing ones ran")
	require.Equal(t, int64(1), wrapped.Load())
	require.Equal(t, int64(1), obs.published.Load())
	require.Equal(t, int64(3), obs.handled.Load())
}

// Without an observer or middleware a Topic calls the handlers straight
// from a typed list; a failure or a panic there is still named, handed to
// the dead-letter callback, and does not keep the handlers after it from
// running.
func TestATopicsDirectCallsKeepPublishGuarantees(t *testing.T) {
	ctx := context.Background()
	var dead []string
	b, err := bus.New(bus.WithDeadLetter(func(_ context.Context, e *bus.HandlerError) { dead = append(dead, e.Handler) }))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close(ctx)) })
	boom := errors.New("boom")
	var ran []string
	handler := func(name string, fail func(n int) error) {
		_, err := bus.Subscribe(b, func(_ context.Context, e topicEvent) error {
			ran = append(ran, name)
			return fail(e.N)
		}, bus.Name(name))
		require.NoError(t, err)
	}
	ok := func(int) error { return nil }
	handler("first", ok)
	handler("fails-on-odd", func(n int) error {
		if n%2 == 1 {
			return boom
		}
		return nil
	})
	handler("panics-on-3", func(n int) error {
		if n == 3 {
			panic("three")
		}
		return nil
	})
	handler("last", ok)
	topic := bus.TopicOf[topicEvent](b)
	for n := 1; n <= 4; n++ {
		ran = nil
		err := topic.Publish(ctx, topicEvent{N: n})
		require.Equal(t, []string{"first", "fails-on-odd", "panics-on-3", "last"}, ran, "n=%d", n)
		require.Equal(t, n%2 == 1, errors.Is(err, boom), "n=%d: %v", n, err)
		var perr *bus.PanicError
		require.Equal(t, n == 3, errors.As(err, &perr), "n=%d: %v", n, err)
		if err != nil {
			require.ErrorContains(t, err, "fails-on-odd")
		}
	}
	require.Equal(t, []string{"fails-on-odd", "fails-on-odd", "panics-on-3"}, dead)
}

type tallyObserver struct{ published, handled atomic.Int64 }

func (o *tallyObserver) Published(context.Context, string)          { o.published.Add(1) }
func (o *tallyObserver) Handled(context.Context, bus.HandlerResult) { o.handled.Add(1) }

type shape interface{ Area() int }
type square struct{ Side int }

func (s square) Area() int { return s.Side * s.Side }

// A Topic of an interface type routes each event by the type it holds,
// as PublishEvent does.
func TestATopicOfAnInterfaceRoutesByTheConcreteType(t *testing.T) {
	ctx := context.Background()
	b, err := bus.New()
	require.NoError(t, err)
	var squares, shapes int
	_, err = bus.Subscribe(b, func(_ context.Context, s square) error { squares += s.Area(); return nil })
	require.NoError(t, err)
	_, err = bus.Subscribe(b, func(_ context.Context, s shape) error { shapes += s.Area(); return nil })
	require.NoError(t, err)
	require.NoError(t, bus.TopicOf[shape](b).Publish(ctx, square{Side: 3}))
	require.Equal(t, 9, squares)
	require.Equal(t, 9, shapes)
}

// Once its route is known a Topic's publish to a plain subscriber
// allocates nothing.
func TestATopicPublishAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	b, err := bus.New()
	require.NoError(t, err)
	var sum int
	_, err = bus.Subscribe(b, func(_ context.Context, e topicEvent) error { sum += e.N; return nil })
	require.NoError(t, err)
	topic := bus.TopicOf[topicEvent](b)
	require.NoError(t, topic.Publish(ctx, topicEvent{N: 1}))
	allocs := testing.AllocsPerRun(1000, func() {
		if err := topic.Publish(ctx, topicEvent{N: 1}); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, 1002, sum)
}

// Publishing through one Topic from many goroutines while subscriptions
// come and go: every publish reaches the subscription that stays (run
// with -race).
func TestATopicIsSafeWhileSubscriptionsChange(t *testing.T) {
	ctx := context.Background()
	b, err := bus.New()
	require.NoError(t, err)
	var kept atomic.Int64
	_, err = bus.Subscribe(b, func(context.Context, topicEvent) error { kept.Add(1); return nil })
	require.NoError(t, err)
	topic := bus.TopicOf[topicEvent](b)
	const publishers, each = 4, 500
	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			for range each {
				if err := topic.Publish(ctx, topicEvent{N: 1}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for range 50 {
		s, err := bus.Subscribe(b, func(context.Context, topicEvent) error { return nil })
		require.NoError(t, err)
		s.Unsubscribe()
	}
	wg.Wait()
	require.Equal(t, int64(publishers*each), kept.Load())
}
