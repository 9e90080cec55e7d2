package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	_ "github.com/mattn/go-sqlite3"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// OrderPlaced and OrderPaid are the domain events the to-do list is built from.
type (
	OrderPlaced struct {
		ID    string
		PayBy time.Time
	}
	OrderPaid struct{ ID string }
)

func main() {
	checkArgs() // args.go: -h says what this program does; it takes no arguments
	if err := quickstart(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// quickstart runs the program on a database in a temporary directory until
// Ctrl-C. It returns instead of exiting so its deferred cleanup runs.
func quickstart() (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "passage-quickstart")
	if err != nil {
		return fmt.Errorf("create a temporary directory: %w", err)
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	return run(ctx, filepath.Join(dir, "quickstart.db"), clockwork.NewRealClock(), os.Stdout, nil)
}

// run wires passage together and places one order; started, when not nil,
// receives the ticker so a test can drive a fake clock. What fails to close
// or stop on the way out is joined to the returned error.
func run(ctx context.Context, path string, clock clockwork.Clock, out io.Writer, started func(*tick.Ticker)) (err error) {
	db, err := sqlx.Open("sqlite3", path+"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer func() { err = errors.Join(err, db.Close()) }()

	b, err := bus.New()
	if err != nil {
		return fmt.Errorf("create the bus: %w", err)
	}
	defer func() { err = errors.Join(err, b.Close(context.Background())) }()

	// The to-do list: an order is pending from OrderPlaced until OrderPaid.
	unpaid, err := todolist.Open(ctx, db, "unpaid-orders")
	if err != nil {
		return fmt.Errorf("open the to-do list: %w", err)
	}
	projection := todolist.NewProjection(unpaid)
	todolist.AddOn(projection, func(e OrderPlaced) (string, time.Time) { return e.ID, e.PayBy })
	todolist.RemoveOn(projection, func(e OrderPaid) string { return e.ID })
	if _, err := projection.Subscribe(b); err != nil {
		return fmt.Errorf("subscribe the to-do list's projection: %w", err)
	}

	// Every minute, the orders past their deadline are cancelled.
	cancelUnpaid, err := todolist.Handle[tick.MinuteHasPassed](unpaid,
		func(ctx context.Context, item todolist.Item) error {
			fmt.Fprintf(out, "order %s not paid by %s: cancelled\n", item.ID, item.Due.Format(time.Kitchen))
			return nil // done: the item leaves the list
		}, todolist.WithClock(clock))
	if err != nil {
		return fmt.Errorf("create the cancel-unpaid handler: %w", err)
	}
	if _, err := bus.Subscribe(b, cancelUnpaid); err != nil {
		return fmt.Errorf("subscribe the cancel-unpaid handler: %w", err)
	}

	// The ticker publishes MinuteHasPassed on the bus; its cursor lives in
	// the same database, so a restart neither loses nor repeats a minute.
	cursors, err := tick.NewSQLStore(ctx, db)
	if err != nil {
		return fmt.Errorf("open the ticker's cursor store: %w", err)
	}
	ticker, err := tick.New(b, cursors, tick.WithUnits(tick.Minute), tick.WithClock(clock))
	if err != nil {
		return fmt.Errorf("create the ticker: %w", err)
	}
	if err := ticker.Start(ctx); err != nil {
		return fmt.Errorf("start the ticker: %w", err)
	}
	defer func() { err = errors.Join(err, ticker.Stop(context.Background())) }()

	if err := b.Publish(ctx, OrderPlaced{ID: "order-1", PayBy: clock.Now().Add(time.Minute)}); err != nil {
		return fmt.Errorf("place order-1: %w", err)
	}
	fmt.Fprintln(out, "order order-1 placed; waiting for its deadline to pass")
	if started != nil {
		started(ticker)
	}
	<-ctx.Done()
	return nil
}
