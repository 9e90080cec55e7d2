package bus_test

import (
	"context"
	"errors"
	"fmt"

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
