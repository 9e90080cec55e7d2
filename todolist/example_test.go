package todolist_test

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
	_ "github.com/mattn/go-sqlite3"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// openExampleDB opens a SQLite database in a temporary directory.
func openExampleDB() (db *sqlx.DB, cleanup func()) {
	dir, err := os.MkdirTemp("", "todolist-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err = sqlx.Open("sqlite3", filepath.Join(dir, "orders.db"))
	if err != nil {
		log.Fatal(err)
	}
	return db, func() { _ = db.Close(); _ = os.RemoveAll(dir) }
}

// Cancel unpaid orders when their payment deadline has passed: a processor
// for the pending-orders list, subscribed to the minute ticks on a bus.
func ExampleHandle() {
	ctx := context.Background()
	db, cleanup := openExampleDB()
	defer cleanup()

	pending, err := todolist.Open(ctx, db, "pending-orders")
	if err != nil {
		log.Fatal(err)
	}
	deadline := time.Date(2026, 3, 29, 10, 15, 0, 0, time.UTC)
	_ = pending.Add(ctx, "order-1", deadline)
	_ = pending.Add(ctx, "order-2", deadline.Add(time.Hour))

	cancelOrder := func(ctx context.Context, item todolist.Item) error {
		// A real action loads the order and cancels it if still unpaid.
		fmt.Printf("cancel %s, due %s\n", item.ID, item.Due.Format("15:04"))
		return nil
	}
	clock := clockwork.NewFakeClockAt(deadline.Add(5 * time.Second))
	handler, err := todolist.Handle[tick.MinuteHasPassed](pending, cancelOrder, todolist.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}

	b, err := bus.New()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = b.Close(ctx) }()
	if _, err := bus.Subscribe(b, handler); err != nil {
		log.Fatal(err)
	}
	// What the ticker publishes when 10:15 has passed.
	if err := b.Publish(ctx, tick.MinuteHasPassed{Passage: tick.Passage{At: deadline}}); err != nil {
		log.Fatal(err)
	}

	stats, err := pending.Stats(ctx, clock.Now())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pending %d, due %d\n", stats.Pending, stats.Due)
	// Output:
	// cancel order-1, due 10:15
	// pending 1, due 0
}

type OrderInitiated struct {
	OrderID      string
	TimeoutAfter time.Time
}

type OrderCompleted struct{ OrderID string }

// Keep the pending-orders list up to date from the order's events, in the
// transaction that stores them.
func ExampleProjection() {
	ctx := context.Background()
	db, cleanup := openExampleDB()
	defer cleanup()
	pending, err := todolist.Open(ctx, db, "pending-orders")
	if err != nil {
		log.Fatal(err)
	}

	p := todolist.NewProjection(pending)
	todolist.AddOn(p, func(e OrderInitiated) (string, time.Time) { return e.OrderID, e.TimeoutAfter })
	todolist.RemoveOn(p, func(e OrderCompleted) string { return e.OrderID })

	deadline := time.Date(2026, 3, 29, 10, 15, 0, 0, time.UTC)
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	// ... append the events to the event store in tx, then:
	if err := p.Apply(ctx, tx,
		OrderInitiated{"order-1", deadline},
		OrderInitiated{"order-2", deadline},
		OrderCompleted{"order-1"},
	); err != nil {
		_ = tx.Rollback()
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	due, err := pending.Due(ctx, deadline, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, item := range due {
		fmt.Println(item.ID, item.Due.Format(time.RFC3339))
	}
	// Output:
	// order-2 2026-03-29T10:15:00Z
}

// Work the due items once, outside a bus: Process takes what was due at the
// boundary and reports what it did.
func ExampleProcessor_Process() {
	ctx := context.Background()
	db, cleanup := openExampleDB()
	defer cleanup()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 29, 10, 15, 30, 0, time.UTC))
	pending, err := todolist.Open(ctx, db, "pending-orders", todolist.WithListClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	deadline := time.Date(2026, 3, 29, 10, 15, 0, 0, time.UTC)
	_ = pending.Add(ctx, "order-1", deadline)
	_ = pending.Add(ctx, "order-2", deadline.Add(-time.Minute))
	_ = pending.Add(ctx, "order-3", deadline.Add(time.Hour))

	p, err := todolist.NewProcessor(pending, func(ctx context.Context, item todolist.Item) error {
		fmt.Println("cancel", item.ID)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	r, err := p.Process(ctx, deadline)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("claimed %d, done %d, backlog %d\n", r.Claimed, r.Done, r.Backlog)
	// Output:
	// cancel order-2
	// cancel order-1
	// claimed 2, done 2, backlog 0
}

// An item whose action keeps failing is parked with its last error; once
// the cause is fixed, Reactivate gives it a fresh start.
func ExampleList_Reactivate() {
	ctx := context.Background()
	db, cleanup := openExampleDB()
	defer cleanup()
	due := time.Date(2026, 3, 29, 10, 15, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(due)
	pending, err := todolist.Open(ctx, db, "pending-orders", todolist.WithListClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	_ = pending.Add(ctx, "order-1", due)

	paymentsUp := false
	p, err := todolist.NewProcessor(pending, func(ctx context.Context, item todolist.Item) error {
		if !paymentsUp {
			return errors.New("payment service unavailable")
		}
		fmt.Println("cancel", item.ID)
		return nil
	}, todolist.WithMaxAttempts(1))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := p.Process(ctx, clock.Now()); err != nil {
		log.Fatal(err)
	}
	parked, err := pending.Parked(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, item := range parked {
		fmt.Printf("parked %s after %d attempt(s): %s\n", item.ID, item.Attempts, item.LastError)
	}

	paymentsUp = true
	if err := pending.Reactivate(ctx, "order-1"); err != nil {
		log.Fatal(err)
	}
	clock.Advance(time.Minute)
	if _, err := p.Process(ctx, clock.Now()); err != nil {
		log.Fatal(err)
	}
	stats, err := pending.Stats(ctx, clock.Now())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pending %d, parked %d\n", stats.Pending, stats.Parked)
	// Output:
	// parked order-1 after 1 attempt(s): payment service unavailable
	// cancel order-1
	// pending 0, parked 0
}

// Send the reminders of a day in one transaction per batch: the action
// writes each reminder to an outbox in the transaction that took the
// batch, and the items leave the list in the same commit, so a crash
// leaves both or neither.
func ExampleNewTxBatchProcessor() {
	ctx := context.Background()
	db, cleanup := openExampleDB()
	defer cleanup()
	if _, err := db.Exec(`CREATE TABLE outbox (message TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	reminders, err := todolist.Open(ctx, db, "reminders")
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC)
	_ = reminders.AddMany(ctx, []todolist.NewItem{{ID: "invoice-7", Due: at}, {ID: "invoice-8", Due: at}, {ID: "invoice-9", Due: at.Add(24 * time.Hour)}})

	remind := func(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
		outcomes := make([]error, len(items))
		for i, it := range items {
			_, outcomes[i] = tx.ExecContext(ctx, `INSERT INTO outbox (message) VALUES (?)`, "remind "+it.ID)
		}
		return outcomes, nil
	}
	clock := clockwork.NewFakeClockAt(at.Add(time.Minute))
	p, err := todolist.NewTxBatchProcessor(reminders, remind, todolist.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Process(ctx, at)
	if err != nil {
		log.Fatal(err)
	}
	var sent []string
	if err := db.Select(&sent, `SELECT message FROM outbox ORDER BY message`); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Done, "done:", sent)
	// Output:
	// 2 done: [remind invoice-7 remind invoice-8]
}
