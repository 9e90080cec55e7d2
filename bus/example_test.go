package bus_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/passage-of-time/passage/bus"
)

// An event and an interface it implements, as tick.DayHasPassed and
// tick.Event are.
type (
	Event          interface{ Name() string }
	OrderTimedOut  struct{ OrderID string }
	PaymentArrived struct{ OrderID string }
)

func (OrderTimedOut) Name() string  { return "order timed out" }
func (PaymentArrived) Name() string { return "payment arrived" }

func Example() {
	b, err := bus.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close(context.Background())

	// A typed handler for one event type...
	_, _ = bus.Subscribe(b, func(_ context.Context, e OrderTimedOut) error {
		fmt.Println("cancelling", e.OrderID)
		return errors.New("order already paid")
	}, bus.Name("cancel"))
	// ...and one for every event implementing an interface.
	_, _ = bus.Subscribe(b, func(_ context.Context, e Event) error {
		fmt.Println("audit:", e.Name())
		return nil
	}, bus.Name("audit"))

	ctx := context.Background()
	// PublishEvent is the allocation-free path for one event of a known type.
	err = bus.PublishEvent(ctx, b, OrderTimedOut{OrderID: "o-1"})
	fmt.Println("error:", err)
	err = b.Publish(ctx, PaymentArrived{OrderID: "o-2"})
	fmt.Println("error:", err)

	// Output:
	// cancelling o-1
	// audit: order timed out
	// error: bus: handler "cancel" on bus_test.OrderTimedOut: order already paid
	// audit: payment arrived
	// error: <nil>
}

// Asynchronous, keyed delivery: each order's events run one at a time and
// in order, different orders in parallel on the four workers.
func ExampleKeyBy() {
	b, err := bus.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	var mu sync.Mutex
	seen := map[string][]int{}
	_, err = bus.Subscribe(b, func(_ context.Context, e Step) error {
		mu.Lock()
		defer mu.Unlock()
		seen[e.OrderID] = append(seen[e.OrderID], e.N)
		return nil
	}, bus.Async(4, 100), bus.KeyBy(func(e Step) string { return e.OrderID }))
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	for n := 1; n <= 3; n++ {
		for _, id := range []string{"o-1", "o-2", "o-3"} {
			if err := bus.PublishEvent(ctx, b, Step{OrderID: id, N: n}); err != nil {
				fmt.Println(err)
			}
		}
	}
	// Close waits until every queued event was handled.
	if err := b.Close(ctx); err != nil {
		fmt.Println(err)
	}
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		fmt.Println(id, seen[id])
	}

	// Output:
	// o-1 [1 2 3]
	// o-2 [1 2 3]
	// o-3 [1 2 3]
}

// Step is one step of an order's life.
type Step struct {
	OrderID string
	N       int
}

// A publisher on a hot path takes the Topic of its event type once and
// publishes through it: the same delivery as PublishEvent, without looking
// the route up at every event.
func ExampleTopicOf() {
	b, err := bus.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer func() { _ = b.Close(ctx) }()
	timedOut := bus.TopicOf[OrderTimedOut](b)
	if _, err := bus.Subscribe(b, func(_ context.Context, e OrderTimedOut) error {
		fmt.Println("cancel", e.OrderID)
		return nil
	}); err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range []string{"o-1", "o-2"} {
		if err := timedOut.Publish(ctx, OrderTimedOut{OrderID: id}); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// cancel o-1
	// cancel o-2
}
