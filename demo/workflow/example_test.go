package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	_ "github.com/mattn/go-sqlite3" // the embedded database

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/demo/workflow"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// Two orders on SQLite, time passing on a fake clock through a real ticker
// and bus: Ada pays and her coffee ships; Bob does not, and 15 minutes
// after his order first ran its stock is released; his payment five
// minutes later changes nothing.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "order-workflow")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlx.Open("sqlite3", "file:"+filepath.Join(dir, "orders.db")+"?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC))

	// The engine, the workflow and its warehouse, and the engine's
	// processor woken by every MinuteHasPassed.
	e, err := orchestration.New(ctx, db, orchestration.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	warehouse := workflow.NewWarehouse(map[string]int{"coffee": 10})
	if err := workflow.Register(e, warehouse); err != nil {
		log.Fatal(err)
	}
	p, err := e.Processor()
	if err != nil {
		log.Fatal(err)
	}
	b, err := bus.New()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = b.Close(ctx) }()
	if _, err := bus.Subscribe(b, todolist.Handler[tick.MinuteHasPassed](p)); err != nil {
		log.Fatal(err)
	}
	cursors, err := tick.NewSQLStore(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	ticker, err := tick.New(b, cursors, tick.WithClock(clock), tick.WithUnits(tick.Minute))
	if err != nil {
		log.Fatal(err)
	}
	if err := ticker.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = ticker.Stop(ctx) }()
	minutes := func(n int) {
		for range n {
			if err := tick.AdvanceAndWait(ctx, clock, time.Minute, ticker); err != nil {
				log.Fatal(err)
			}
		}
	}
	show := func(id string) {
		at := clock.Now().Format("15:04")
		out, st, err := orchestration.Result[workflow.Shipment](ctx, e, id)
		switch {
		case err == nil:
			fmt.Printf("%s  %s: shipped as %s, paid by %s", at, id, out.Tracking, out.Payment)
		case st.State == orchestration.Running:
			fmt.Printf("%s  %s: awaits its payment until %s", at, id, st.WaitingUntil.Format("15:04"))
		default:
			fmt.Printf("%s  %s: %s, %s", at, id, st.State, st.Error)
		}
		fmt.Printf("; %d coffee available\n", warehouse.Available("coffee"))
	}

	coffee := func(n int) []ordering.PricedItem {
		return []ordering.PricedItem{{ProductID: "coffee", Quantity: n, UnitPrice: 1250}}
	}
	if _, err := workflow.Place(ctx, e, workflow.Order{ID: "ada", Items: coffee(2), Amount: 2500}); err != nil {
		log.Fatal(err)
	}
	clock.Advance(30 * time.Second)
	if _, err := workflow.Place(ctx, e, workflow.Order{ID: "bob", Items: coffee(3), Amount: 3750}); err != nil {
		log.Fatal(err)
	}
	// 09:01: both reserve, and await their payment until 09:16.
	if err := tick.AdvanceAndWait(ctx, clock, 30*time.Second, ticker); err != nil {
		log.Fatal(err)
	}
	show("ada")

	minutes(4)
	if err := workflow.Pay(ctx, e, "ada", workflow.Payment{Reference: "card-ada", Amount: 2500}); err != nil {
		log.Fatal(err)
	}
	minutes(1) // the signal made ada due: the 09:06 tick ships
	show("ada")

	minutes(10) // 09:16: bob's 15 minutes are over
	show("bob")

	minutes(4) // 09:20: bob pays late; the order has ended, the payment is refused
	if err := workflow.Pay(ctx, e, "bob", workflow.Payment{Reference: "card-bob", Amount: 3750}); errors.Is(err, orchestration.ErrFinished) {
		fmt.Println("bob's payment refused, to refund:", err)
	} else if err != nil {
		log.Fatal(err)
	}
	minutes(1)
	show("bob")
	fmt.Println("not paid:", workflow.NotPaid(mustStatus(e, "bob")))
	for _, line := range warehouse.Journal() {
		fmt.Println(line)
	}
	// Output:
	// 09:01  ada: awaits its payment until 09:16; 5 coffee available
	// 09:06  ada: shipped as parcel-1, paid by card-ada; 5 coffee available
	// 09:16  bob: failed, workflow: order not paid in time: bob, nothing within 15m0s; 8 coffee available
	// bob's payment refused, to refund: orchestration: signal bob: orchestration: instance finished: it is failed
	// 09:21  bob: failed, workflow: order not paid in time: bob, nothing within 15m0s; 8 coffee available
	// not paid: true
	// reserve ada (key ada/0/reserve stock)
	// reserve bob (key bob/0/reserve stock)
	// ship ada as parcel-1
	// release bob
}

func mustStatus(e *orchestration.Engine, id string) orchestration.Status {
	st, err := e.Status(context.Background(), id)
	if err != nil {
		log.Fatal(err)
	}
	return st
}
