package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/orchestration"
)

// Name is the workflow's registered name: keep it while instances run.
const Name = "order"

// SignalPaid is the signal a payment sends (Pay).
const SignalPaid = "paid"

// PaymentTimeout is how long a placed order waits for its payment.
const PaymentTimeout = 15 * time.Minute

// Order is the workflow's input: what the client confirmed. Its ID is the
// instance's id.
type Order struct {
	ID     string
	Items  []ordering.PricedItem
	Amount ordering.Money
}

// Payment is the payload of the paid signal, which the payment side sends
// once the order is paid in full.
type Payment struct {
	Reference string
	Amount    ordering.Money
}

// Shipment is the workflow's result when the order was paid in time.
type Shipment struct {
	Tracking string
	Payment  string
}

// Register registers the ordering workflow on e, its steps acting on w.
// Every process running e's processor must register it with its warehouse.
func Register(e *orchestration.Engine, w *Warehouse) error {
	if w == nil {
		return fmt.Errorf("%w: nil warehouse", orchestration.ErrInvalidArgument)
	}
	return orchestration.Register(e, Name, process{w}.run)
}

type process struct{ warehouse *Warehouse }

// run is the ordering process: reserve, await payment or 15 minutes, ship
// — or unwind, releasing the stock.
func (p process) run(ctx orchestration.Context, o Order) (Shipment, error) {
	// Registered before the reservation, not after: a reservation that took
	// effect but whose record was lost (a crash between the two) must be
	// released too if the order is cancelled before the step runs again.
	// Releasing an order that holds nothing does nothing.
	orchestration.Compensate(ctx, "release stock", func(c context.Context) error {
		return p.warehouse.Release(c, o.ID)
	})
	if _, err := orchestration.Step(ctx, "reserve stock", func(c context.Context, info orchestration.StepInfo) (string, error) {
		id, err := p.warehouse.Reserve(c, info.Key, o.ID, o.Items) // info.Key: the same on every attempt
		if errors.Is(err, ErrOutOfStock) {
			return "", orchestration.NonRetryable(err)
		}
		return id, err
	}); err != nil {
		return Shipment{}, err
	}

	payment, paid, err := orchestration.Await[Payment](ctx, SignalPaid, PaymentTimeout)
	if err != nil {
		return Shipment{}, err // ErrSuspended while it waits, ErrCancelled: as is
	}
	if !paid {
		// Failing unwinds the saga: the engine releases the stock.
		return Shipment{}, fmt.Errorf("%w: %s, nothing within %v", ErrNotPaid, o.ID, PaymentTimeout)
	}

	tracking, err := orchestration.Step(ctx, "ship", func(c context.Context, info orchestration.StepInfo) (string, error) {
		return p.warehouse.Ship(c, info.Key, o.ID)
	})
	if err != nil {
		return Shipment{}, err
	}
	return Shipment{Tracking: tracking, Payment: payment.Reference}, nil
}

// Place starts the ordering workflow for o, its instance id o.ID; placing
// the same id again is a no-op that returns the instance's status. It runs
// when e's processor next ticks, and the PaymentTimeout counts from then.
func Place(ctx context.Context, e *orchestration.Engine, o Order) (orchestration.Status, error) {
	if o.ID == "" || len(o.Items) == 0 || o.Amount <= 0 {
		return orchestration.Status{}, fmt.Errorf("%w: %q needs an id, items and a positive amount", ErrInvalidOrder, o.ID)
	}
	for _, it := range o.Items {
		if it.ProductID == "" || it.Quantity <= 0 {
			return orchestration.Status{}, fmt.Errorf("%w: %s: item %+v", ErrInvalidOrder, o.ID, it)
		}
	}
	return orchestration.Start(ctx, e, Name, o.ID, o)
}

// Pay signals the order's payment. The signal is recorded in the instance's
// history and wakes it; whether it ships the order depends on what was
// recorded first. A payment for an order that has ended — its timeout
// recorded (not paid, its stock released) or cancelled — is refused with
// an error wrapping orchestration.ErrFinished and recorded nowhere: the
// payment side refunds it.
func Pay(ctx context.Context, e *orchestration.Engine, orderID string, p Payment) error {
	return e.Signal(ctx, orderID, SignalPaid, p)
}

// NotPaid reports whether st is an order workflow that ended because no
// payment came in time (the history keeps ErrNotPaid as text).
func NotPaid(st orchestration.Status) bool {
	return st.Workflow == Name && st.State == orchestration.Failed && strings.HasPrefix(st.Error, ErrNotPaid.Error())
}
