package ordering_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/tick"
)

// forEachBackend runs test on SQLite, and on PostgreSQL when configured.
func forEachBackend(t *testing.T, test func(t *testing.T, backend sqldbtest.Backend)) {
	t.Helper()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			test(t, backend)
		})
	}
}

func TestUnpaidOrderIsCancelledAtTheFirstMinuteBoundaryAfterItsDeadline(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		id := e.place(t, 14*time.Minute+30*time.Second) // due 09:14:30
		require.True(t, e.onList(t, id))

		e.pass(t, 14*time.Minute)
		o, err := e.sys.Order(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, ordering.StatusAwaitingPayment, o.Status, "09:14 is before the deadline")
		require.True(t, e.onList(t, id))

		e.pass(t, time.Minute)
		o, err = e.sys.Order(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, ordering.StatusCancelled, o.Status)
		evs := e.events(t, id)
		require.Len(t, evs, 2)
		require.Equal(t, ordering.OrderCancelled{
			OrderID: id, Reason: ordering.ReasonTimedOut, CancelledAt: start.Add(15 * time.Minute),
		}, evs[1])
		require.False(t, e.onList(t, id), "a cancelled order leaves PendingOrders")

		e.pass(t, 10*time.Minute)
		require.Len(t, e.events(t, id), 2, "later ticks cancel nothing more")
		require.Equal(t, ordering.Stats{TimedOut: 1}, e.sys.Stats())
		e.requireNoFailures(t)
	})
}

func TestPaidOrderIsNeverCancelled(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setup(t, backend)
		completed := e.place(t, 5*time.Minute)
		paidOnly := e.place(t, 5*time.Minute)
		e.pass(t, 4*time.Minute)
		e.payAndComplete(t, completed)
		_, err := e.sys.Pay(context.Background(), paidOnly, 2500)
		require.NoError(t, err)
		require.False(t, e.onList(t, completed), "a completed order leaves PendingOrders")

		e.pass(t, time.Hour)

		evs := e.events(t, completed)
		require.Len(t, evs, 3)
		require.IsType(t, ordering.OrderCompleted{}, evs[2])
		o, err := e.sys.Order(context.Background(), paidOnly)
		require.NoError(t, err)
		require.Equal(t, ordering.StatusPaid, o.Status, "a paid order awaiting completion does not time out")
		require.Len(t, e.events(t, paidOnly), 2)
		require.False(t, e.onList(t, paidOnly), "its timeout decided nothing, so the to-do item is done")
		require.Equal(t, ordering.Stats{Untouched: 1}, e.sys.Stats())
		e.requireNoFailures(t)
	})
}

// The payment and completion commit after the handler loaded the unpaid order
// and before it appends the cancellation: the append loses on the expected
// version, the handler reloads, and the completed order decides nothing.
// Per order: a batch holds its orders' to-do items from before the load to
// its commit, and the completion, which removes the order's item, waits
// for it (see TestClientCancellingDuringABatchNeitherWaitsForItNorFails).
func TestCompletionRacingTheTimeoutEndsWithOneClosingEvent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		e := setupWith(t, backend, ordering.Config{PerOrderTimeouts: true})
		id := e.place(t, 2*time.Minute)
		raced := 0
		ordering.SetBeforeDecide(e.sys, func(ctx context.Context, orderID string) error {
			raced++
			return payAndComplete(ctx, e.sys, orderID)
		})

		e.pass(t, 3*time.Minute)

		require.Equal(t, 1, raced)
		evs := e.events(t, id)
		completed, cancelled := closings(evs)
		require.Len(t, completed, 1)
		require.Empty(t, cancelled)
		require.Len(t, evs, 3, "initiated, payment, completion")
		require.False(t, e.onList(t, id))
		require.Equal(t, ordering.Stats{Untouched: 1, Conflicts: 1}, e.sys.Stats())
		e.requireNoFailures(t)
	})
}

func TestTickerDownForAnHourCatchesUpAndCancelsEachTimedOutOrderOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		ctx := context.Background()
		e := setup(t, backend)
		var unpaid []string
		for _, timeout := range []time.Duration{5, 15, 25, 35, 45, 55} {
			unpaid = append(unpaid, e.place(t, timeout*time.Minute))
		}
		paid := unpaid[1]
		unpaid = append(unpaid[:1], unpaid[2:]...)
		later := e.place(t, 90*time.Minute)
		e.pass(t, time.Minute)
		e.payAndComplete(t, paid)

		// The process dies at 09:01 and comes back at 10:01.
		require.NoError(t, e.ticker.Stop(ctx))
		e.clock.Advance(time.Hour)
		for _, id := range unpaid {
			require.Len(t, e.events(t, id), 1, "nothing cancels while the ticker is down")
		}
		e.startTicker(t, tick.WithCatchUp(tick.Minute, tick.All{Window: 2 * time.Hour, Max: 1000}))
		require.NoError(t, tick.AdvanceAndWait(ctx, e.clock, 0, e.ticker))
		require.EqualValues(t, 60, e.ticker.Stats().Emitted, "the missed minutes 09:02..10:01 are caught up")

		// The same minutes published again, as a second replica or a replayed
		// tick would: nothing happens twice.
		for m := time.Duration(1); m <= 61; m++ {
			require.NoError(t, e.sys.Bus().Publish(ctx, tick.MinuteHasPassed{Passage: tick.Passage{At: start.Add(m * time.Minute)}}))
		}
		e.pass(t, 5*time.Minute)

		for _, id := range unpaid {
			_, cancelled := closings(e.events(t, id))
			require.Len(t, cancelled, 1, "order %s", id)
			require.Equal(t, ordering.ReasonTimedOut, cancelled[0].Reason)
			require.Equal(t, start.Add(61*time.Minute), cancelled[0].CancelledAt, "cancelled at the restart")
			require.False(t, e.onList(t, id))
		}
		completed, cancelled := closings(e.events(t, paid))
		require.Len(t, completed, 1)
		require.Empty(t, cancelled)
		require.Len(t, e.events(t, later), 1, "an order due later is left alone")
		require.True(t, e.onList(t, later))
		require.Equal(t, ordering.Stats{TimedOut: int64(len(unpaid))}, e.sys.Stats())
		e.requireNoFailures(t)
	})
}

// A payment races one order's timeout: per order, it lands between the
// load and the append, and that append conflicts; in a batch, which holds
// its orders' turns from the load to the append, the payment is under way
// when the batch takes the turns, so that order is busy. Either way that
// order alone is decided again — paid, it is not cancelled — while the
// others are cancelled. On SQLite no payment is under way during a batch:
// its transaction holds the database's write lock, and a payment waits.
func TestAPaymentRacingOneOrderOfABatchFailsNoneOfTheOthers(t *testing.T) {
	t.Parallel()
	for _, mode := range timeoutModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
				if backend.Name == "sqlite" && !mode.cfg.PerOrderTimeouts {
					t.Skip("a batch's transaction holds SQLite's write lock: no payment can be under way during it")
				}
				e := setupWith(t, backend, mode.cfg)
				var ids []string
				for range 5 {
					ids = append(ids, e.place(t, 2*time.Minute))
				}
				racing := ids[2]
				raced := 0
				var busyAt, retriedAt time.Time // batch only
				if mode.cfg.PerOrderTimeouts {
					// Between the load and the append.
					ordering.SetBeforeDecide(e.sys, func(ctx context.Context, orderID string) error {
						if orderID != racing {
							return nil
						}
						raced++
						_, err := e.sys.Pay(ctx, orderID, 2500)
						return err
					})
				} else {
					// A batch holds its orders' turns from the load to the
					// append: the payment is under way when the batch takes
					// the turns, and commits before it tries again.
					var paying *sqlx.Tx
					ordering.SetBeforeDecide(e.sys, func(ctx context.Context, orderID string) error {
						if orderID != racing {
							return nil
						}
						if paying != nil {
							retriedAt = e.clock.Now()
							return paying.Commit()
						}
						busyAt = e.clock.Now()
						raced++
						var err error
						if paying, err = e.db.BeginTxx(ctx, nil); err != nil {
							return err
						}
						_, err = e.sys.Store().AppendTx(ctx, paying, ordering.StreamOf(orderID), eventstore.Exact(1),
							ordering.OrderPaymentRecorded{OrderID: orderID, Amount: 2500, RecordedAt: e.clock.Now()})
						return err
					})
				}

				e.pass(t, 3*time.Minute)

				require.Equal(t, 1, raced)
				require.Equal(t, busyAt, retriedAt, "a batch tries a busy order again in the same tick")
				for _, id := range ids {
					o, err := e.sys.Order(context.Background(), id)
					require.NoError(t, err)
					if id == racing {
						require.Equal(t, ordering.StatusPaid, o.Status, "the paid order is never cancelled")
						require.Len(t, e.events(t, id), 2)
						continue
					}
					require.Equal(t, ordering.StatusCancelled, o.Status, id)
					require.False(t, e.onList(t, id))
				}
				require.False(t, e.onList(t, racing), "its timeout decided nothing: done")
				require.Equal(t, ordering.Stats{TimedOut: 4, Untouched: 1, Conflicts: 1}, e.sys.Stats())
				e.requireNoFailures(t)
			})
		})
	}
}
