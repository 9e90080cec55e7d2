package workflow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/demo/workflow"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/orchestration"
)

func TestPaidInTimeShipsAndReservesOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		e.place("o-1", 2)
		st := e.status("o-1")
		require.Equal(t, orchestration.Running, st.State)
		require.Equal(t, start.Add(workflow.PaymentTimeout), st.WaitingUntil, "awaits the payment until 09:15")
		require.Equal(t, 8, e.warehouse.Available("coffee"))

		e.pass(14 * time.Minute)
		e.pay("o-1")
		e.tick() // the signal made the instance due now

		out, st, err := orchestration.Result[workflow.Shipment](context.Background(), e.engine, "o-1")
		require.NoError(t, err)
		require.Equal(t, orchestration.Completed, st.State)
		require.Equal(t, workflow.Shipment{Tracking: "parcel-1", Payment: "pay-o-1"}, out)
		e.pass(time.Hour)
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "ship o-1 as parcel-1"}, e.warehouse.Journal())
		require.Equal(t, 8, e.warehouse.Available("coffee"), "shipped, not released")
		e.requireFailures(0)
	})
}

func TestNotPaidWithin15MinutesFailsAndReleasesTheStockOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		e.place("o-1", 2)
		e.pass(14 * time.Minute)
		require.Equal(t, orchestration.Running, e.status("o-1").State, "09:14 is before the deadline")
		require.Equal(t, 8, e.warehouse.Available("coffee"), "still held")

		e.pass(time.Minute)
		st := e.status("o-1")
		require.Equal(t, orchestration.Failed, st.State)
		require.Equal(t, "workflow: order not paid in time: o-1, nothing within 15m0s", st.Error)
		require.True(t, workflow.NotPaid(st))
		require.Equal(t, 10, e.warehouse.Available("coffee"), "released at 09:15")
		_, _, err := orchestration.Result[workflow.Shipment](context.Background(), e.engine, "o-1")
		require.ErrorContains(t, err, "is failed: workflow: order not paid in time")

		e.pass(time.Hour)
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "release o-1"}, e.warehouse.Journal())
		e.requireFailures(0)
	})
}

// A payment signalled after the timeout was recorded is refused with
// ErrFinished: the instance has ended, nothing records or takes it,
// nothing ships, the stock stays released.
func TestPaymentAfterTheTimeoutChangesNothing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		e.place("o-1", 2)
		e.pass(15 * time.Minute)
		before := e.status("o-1")
		require.True(t, workflow.NotPaid(before))

		e.pass(5 * time.Minute)
		err := workflow.Pay(context.Background(), e.engine, "o-1", workflow.Payment{Reference: "pay-o-1", Amount: 2500})
		require.ErrorIs(t, err, orchestration.ErrFinished, "the payment side refunds it")
		e.pass(time.Hour)

		require.Equal(t, before, e.status("o-1"), "nothing recorded, nothing changed")
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "release o-1"}, e.warehouse.Journal())
		require.Equal(t, 10, e.warehouse.Available("coffee"))
		require.NoError(t, e.engine.Replay(context.Background(), "o-1"), "the history still replays")
		e.requireFailures(0)
	})
}

// The deadline is enforced when the passage of time wakes the instance: a
// payment signalled past 09:15 while no processor ran (a ticker down) is
// recorded before the timeout and wins — as a payment recorded before the
// to-do list's timeout handler ran does in package ordering.
func TestPaymentRecordedBeforeTheLateWakeUpWins(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		e.place("o-1", 2)
		e.clock.Advance(20 * time.Minute) // nothing ticks
		e.pay("o-1")
		e.tick()
		require.Equal(t, orchestration.Completed, e.status("o-1").State)
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "ship o-1 as parcel-1"}, e.warehouse.Journal())
	})
}

func TestCancelledOrderReleasesTheStockOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		e.place("o-1", 2)
		e.pass(3 * time.Minute)
		require.NoError(t, e.engine.Cancel(context.Background(), "o-1"))
		e.tick()
		require.Equal(t, orchestration.Cancelled, e.status("o-1").State)
		require.ErrorIs(t, workflow.Pay(context.Background(), e.engine, "o-1", workflow.Payment{Reference: "pay-o-1", Amount: 2500}),
			orchestration.ErrFinished, "too late: cancelled")
		e.pass(time.Hour)
		require.Equal(t, orchestration.Cancelled, e.status("o-1").State)
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "release o-1"}, e.warehouse.Journal())
		require.Equal(t, 10, e.warehouse.Available("coffee"))
		e.requireFailures(0)
	})
}

// The process stops while the order awaits its payment; another starts on
// the same database and finishes it from the history: the reservation is
// replayed, not made again.
func TestRestartWhileAwaitingPaymentResumesWithoutReservingAgain(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		e.place("o-1", 2)
		e.place("o-2", 3)
		e.pass(5 * time.Minute)

		e.restart()
		e.pay("o-1")
		e.pass(15 * time.Minute)

		require.Equal(t, orchestration.Completed, e.status("o-1").State)
		require.True(t, workflow.NotPaid(e.status("o-2")))
		require.Equal(t, []string{
			"reserve o-1 (key o-1/0/reserve stock)",
			"reserve o-2 (key o-2/0/reserve stock)",
			"ship o-1 as parcel-1",
			"release o-2",
		}, e.warehouse.Journal())
		require.Equal(t, 8, e.warehouse.Available("coffee"))
		e.requireFailures(0)
	})
}

// crashAfterReserving makes the process die the first time the warehouse
// has reserved, before the workflow records it: the tick's context is
// cancelled, so the append of the step's result fails, as it would with
// the process gone. It returns the context to tick with.
func crashAfterReserving(t *testing.T, e *env) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	workflow.SetAfterEffect(e.warehouse, func(op, _ string) error {
		if op == "reserve" && ctx.Err() == nil {
			cancel()
		}
		return nil
	})
	_, err := workflow.Place(context.Background(), e.engine, workflow.Order{
		ID: "o-1", Items: []ordering.PricedItem{{ProductID: "coffee", Quantity: 2, UnitPrice: 1250}}, Amount: 2500,
	})
	require.NoError(t, err)
	_, err = e.proc.Process(ctx, e.clock.Now())
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 8, e.warehouse.Available("coffee"), "the warehouse reserved")
	return ctx
}

// Crash between the reservation and its record; a new process takes the
// instance once the dead one's claim lapsed, runs the step again under the
// same idempotency key, and the warehouse answers without reserving twice.
func TestCrashAfterReservingResumesWithoutReservingTwice(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		crashAfterReserving(t, e)

		e.restart()
		e.pass(6 * time.Minute) // the dead processor's lease (5 minutes) lapses
		require.Equal(t, orchestration.Running, e.status("o-1").State)
		e.pay("o-1")
		e.tick()

		require.Equal(t, orchestration.Completed, e.status("o-1").State)
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "ship o-1 as parcel-1"}, e.warehouse.Journal())
		require.Equal(t, 8, e.warehouse.Available("coffee"))
		e.requireFailures(0)
	})
}

// Crash between the reservation and its record, then the order is
// cancelled before the step runs again: the step never runs, yet the stock
// is released, because the compensation was registered before the step.
func TestCrashAfterReservingThenCancelReleasesTheUnrecordedReservation(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		crashAfterReserving(t, e)

		e.restart()
		require.NoError(t, e.engine.Cancel(context.Background(), "o-1"))
		e.pass(6 * time.Minute)

		require.Equal(t, orchestration.Cancelled, e.status("o-1").State)
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "release o-1"}, e.warehouse.Journal())
		require.Equal(t, 10, e.warehouse.Available("coffee"))
		e.requireFailures(0)
	})
}

// The warehouse reserves but its answer is lost (a timeout): the step is
// retried after a durable backoff under the same key, and the warehouse
// answers the retry without reserving again.
func TestLostReserveAnswerIsRetriedUnderTheSameKey(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		lost := 0
		workflow.SetAfterEffect(e.warehouse, func(op, _ string) error {
			if op == "reserve" && lost == 0 {
				lost++
				return errors.New("warehouse: read timeout")
			}
			return nil
		})
		e.place("o-1", 2)
		require.False(t, e.status("o-1").WaitingUntil.IsZero(), "waiting to retry")
		e.pass(time.Minute)
		e.pay("o-1")
		e.tick()

		require.Equal(t, orchestration.Completed, e.status("o-1").State)
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "ship o-1 as parcel-1"}, e.warehouse.Journal())
		require.Equal(t, 8, e.warehouse.Available("coffee"))
		e.requireFailures(0)
	})
}

// A release whose answer is lost fails the wake-up; the processor retries
// it at its backoff and the release, idempotent by order, does nothing more.
func TestLostReleaseAnswerIsRetriedAndReleasesOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		lost := 0
		workflow.SetAfterEffect(e.warehouse, func(op, _ string) error {
			if op == "release" && lost == 0 {
				lost++
				return errors.New("warehouse: read timeout")
			}
			return nil
		})
		e.place("o-1", 2)
		e.pass(15 * time.Minute)
		require.Equal(t, orchestration.Running, e.status("o-1").State, "the compensation has not been recorded yet")
		e.requireFailures(1)

		e.pass(time.Minute)
		require.True(t, workflow.NotPaid(e.status("o-1")))
		require.Equal(t, []string{"reserve o-1 (key o-1/0/reserve stock)", "release o-1"}, e.warehouse.Journal())
		require.Equal(t, 10, e.warehouse.Available("coffee"))
	})
}

func TestOutOfStockFailsAtOnceHoldingNothing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		e.place("o-1", 11)
		st := e.status("o-1")
		require.Equal(t, orchestration.Failed, st.State)
		require.Contains(t, st.Error, "workflow: out of stock: order o-1 needs 11 coffee, 10 left")
		require.False(t, workflow.NotPaid(st))
		require.Empty(t, e.warehouse.Journal())
		require.Equal(t, 10, e.warehouse.Available("coffee"))
		e.requireFailures(0)
	})
}

func TestPlaceRejectsAnIncompleteOrder(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		for _, o := range []workflow.Order{
			{Items: []ordering.PricedItem{{ProductID: "coffee", Quantity: 1}}, Amount: 1},
			{ID: "o-1", Amount: 1},
			{ID: "o-1", Items: []ordering.PricedItem{{ProductID: "coffee", Quantity: 1}}},
			{ID: "o-1", Items: []ordering.PricedItem{{ProductID: "coffee"}}, Amount: 1},
		} {
			_, err := workflow.Place(context.Background(), e.engine, o)
			require.ErrorIs(t, err, workflow.ErrInvalidOrder)
		}
		require.ErrorIs(t, workflow.Register(e.engine, nil), orchestration.ErrInvalidArgument)
	})
}
