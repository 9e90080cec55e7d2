package ordering_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	_ "github.com/mattn/go-sqlite3"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// openExampleDB opens a SQLite database in a temporary directory, with
// immediate transactions and a busy timeout so concurrent writers queue.
func openExampleDB() (db *sqlx.DB, cleanup func()) {
	dir, err := os.MkdirTemp("", "ordering-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err = sqlx.Open("sqlite3", "file:"+filepath.Join(dir, "orders.db")+"?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		log.Fatal(err)
	}
	return db, func() { _ = db.Close(); _ = os.RemoveAll(dir) }
}

// The aggregate on its own: decisions return events, evolving folds them, and
// a closed order decides nothing.
func Example_aggregate() {
	placed := time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC)
	events, err := ordering.Initiate("order-1", "client-1",
		[]ordering.PricedItem{{ProductID: "coffee beans", Quantity: 2, UnitPrice: 1250}}, placed, 15*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	o := ordering.Fold(events...)
	fmt.Println(o.Status, o.Total, "due", o.TimeoutAfter.Format("15:04"))

	fmt.Println("at 09:10:", len(o.TimeOut(placed.Add(10*time.Minute))), "events")
	timedOut := o.TimeOut(placed.Add(16 * time.Minute))
	fmt.Printf("at 09:16: %+v\n", timedOut[0])

	o = ordering.Evolve(o, timedOut[0])
	again, err := o.Cancel("again", placed.Add(time.Hour))
	fmt.Println(o.Status, "- cancelling again:", len(again), "events,", err)
	_, err = o.RecordPayment(2500, placed.Add(time.Hour))
	fmt.Println(err)
	// Output:
	// awaiting payment 25.00 due 09:15
	// at 09:10: 0 events
	// at 09:16: {OrderID:order-1 Reason:timed out CancelledAt:2026-03-29 09:16:00 +0000 UTC}
	// cancelled - cancelling again: 0 events, <nil>
	// ordering: order is closed: order order-1 is cancelled, cannot record a payment
}

// A System on SQLite with a ticker on a fake clock: the unpaid order is
// cancelled at the first minute after its deadline, the paid one completes.
func ExampleOpen() {
	ctx := context.Background()
	db, cleanup := openExampleDB()
	defer cleanup()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC))

	sys, err := ordering.Open(ctx, db, ordering.Config{Clock: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sys.Close(ctx) }()
	cursors, err := tick.NewSQLStore(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	ticker, err := tick.New(sys.Bus(), cursors, tick.WithClock(clock), tick.WithUnits(tick.Minute))
	if err != nil {
		log.Fatal(err)
	}
	if err := ticker.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = ticker.Stop(ctx) }()

	cart := []ordering.PricedItem{{ProductID: "tea", Quantity: 1, UnitPrice: 690}}
	unpaid, _ := sys.Place(ctx, ordering.NewOrder{ClientID: "ada", Items: cart, Timeout: 90 * time.Second})
	paid, _ := sys.Place(ctx, ordering.NewOrder{ClientID: "bob", Items: cart, Timeout: 90 * time.Second})
	if _, err := sys.Pay(ctx, paid, 690); err != nil {
		log.Fatal(err)
	}
	if _, err := sys.Complete(ctx, paid); err != nil {
		log.Fatal(err)
	}

	for range 3 { // 09:01, 09:02, 09:03
		if err := tick.AdvanceAndWait(ctx, clock, time.Minute, ticker); err != nil {
			log.Fatal(err)
		}
	}
	for _, id := range []string{unpaid, paid} {
		o, _ := sys.Order(ctx, id)
		fmt.Println(o.ClientID, o.Status, o.CancelReason, o.ClosedAt.Format("15:04:05"))
	}
	fmt.Printf("%+v\n", sys.Stats())
	// Output:
	// ada cancelled timed out 09:02:00
	// bob completed  09:00:00
	// {TimedOut:1 Untouched:0 Conflicts:0 Unpublished:0}
}

// The parts System wires, put together by hand: the PendingOrders projection
// in the event store's append transaction, and HandleCancelOrder subscribed to
// the minute ticks.
func ExampleHandleCancelOrder() {
	ctx := context.Background()
	db, cleanup := openExampleDB()
	defer cleanup()
	placed := time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(placed)

	b, err := bus.New()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = b.Close(ctx) }()
	pending, err := todolist.Open(ctx, db, ordering.DefaultListName)
	if err != nil {
		log.Fatal(err)
	}
	registry := eventstore.NewRegistry()
	if err := ordering.Register(registry); err != nil {
		log.Fatal(err)
	}
	store, err := eventstore.Open(ctx, db, registry,
		eventstore.WithClock(clock),
		eventstore.WithInTransaction(ordering.InTransaction(ordering.NewPendingOrders(pending))),
		eventstore.WithPublisher(b))
	if err != nil {
		log.Fatal(err)
	}
	handler, err := ordering.HandleCancelOrder(store, pending, clock)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := bus.Subscribe(b, handler); err != nil {
		log.Fatal(err)
	}
	_, _ = bus.Subscribe(b, func(_ context.Context, e ordering.OrderCancelled) error {
		fmt.Println("published:", e.OrderID, e.Reason, e.CancelledAt.Format("15:04"))
		return nil
	})

	events, _ := ordering.Initiate("order-1", "ada", []ordering.PricedItem{{ProductID: "mug", Quantity: 1, UnitPrice: 900}}, placed, 5*time.Minute)
	if _, err := store.Append(ctx, ordering.StreamOf("order-1"), eventstore.NoStream, events...); err != nil {
		log.Fatal(err)
	}
	stats, _ := pending.Stats(ctx, clock.Now())
	fmt.Println("pending:", stats.Pending)

	// What a ticker publishes when 09:05 has passed.
	clock.Advance(5 * time.Minute)
	if err := b.Publish(ctx, tick.MinuteHasPassed{Passage: tick.Passage{At: clock.Now()}}); err != nil {
		log.Fatal(err)
	}
	stats, _ = pending.Stats(ctx, clock.Now())
	fmt.Println("pending:", stats.Pending)
	// Output:
	// pending: 1
	// published: order-1 timed out 09:05
	// pending: 0
}

// The demo tells the story of a handful of orders on a fake clock.
func ExampleRunDemo() {
	db, cleanup := openExampleDB()
	defer cleanup()
	if _, err := ordering.RunDemo(context.Background(), os.Stdout, db, ordering.DemoConfig{Orders: 10}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 09:00  10 clients confirm their carts: 10 orders placed, each to be paid within 3m0s to 15m0s.
	// 09:00  5 of them will pay (1 at the very last moment); the others will not.
	// 09:00  A ticker publishes MinuteHasPassed every minute; on each, the unpaid orders past their deadline are cancelled.
	// 09:03  2 orders paid and completed; 8 still pending.
	// 09:04  1 order paid and completed; 7 still pending.
	// 09:05  2 orders timed out and cancelled; 5 still pending.
	// 09:08  1 order timed out and cancelled; 4 still pending.
	// 09:10  1 order paid and completed; 1 order timed out and cancelled; 2 still pending.
	// 09:15  1 order paid at the last moment, while being timed out: the cancellation lost the race, was decided again and dropped; 1 order timed out and cancelled; 0 still pending.
	// 09:15  Every deadline is behind us.
	//
	// Summary after 15m0s of simulated time:
	//   placed                    10
	//   paid                       5  (1 at the last moment)
	//   completed                  5
	//   cancelled by timeout       5
	//   conflicts resolved         1
	//   still pending              0
}
