package orchestration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	_ "github.com/mattn/go-sqlite3" // the embedded database

	"github.com/passage-of-time/passage/orchestration"
)

// Charge the card; wait for shipping or 3 days; if nothing came, refund
// and tell the customer. The fake clock stands in for the passage of
// time; in a real program a ticker's MinuteHasPassed drives the processor.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "workflows")
	defer os.RemoveAll(dir)
	db, err := sqlx.Open("sqlite3", filepath.Join(dir, "passage.db")+"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	e, err := orchestration.New(ctx, db, orchestration.WithClock(clock))
	if err != nil {
		panic(err)
	}
	err = orchestration.Register(e, "order", func(ctx orchestration.Context, orderID string) (string, error) {
		if _, err := orchestration.Step(ctx, "charge", func(_ context.Context, info orchestration.StepInfo) (string, error) {
			fmt.Println("charge", orderID, "with idempotency key", info.Key)
			return "ch_1", nil
		}); err != nil {
			return "", err
		}
		tracking, shipped, err := orchestration.Await[string](ctx, "shipped", 72*time.Hour)
		if err != nil {
			return "", err
		}
		if shipped {
			return "shipped " + tracking, nil
		}
		if _, err := orchestration.Step(ctx, "refund", func(context.Context, orchestration.StepInfo) (bool, error) {
			fmt.Println("refund", orderID, "at", ctx.Now().Format(time.DateTime))
			return true, nil
		}); err != nil {
			return "", err
		}
		return "refunded", nil
	})
	if err != nil {
		panic(err)
	}
	p, err := e.Processor()
	if err != nil {
		panic(err)
	}
	if _, err := orchestration.Start(ctx, e, "order", "order-1", "order-1"); err != nil {
		panic(err)
	}
	for range 4 * 24 { // four days, hour by hour
		if _, err := p.Process(ctx, clock.Now()); err != nil {
			panic(err)
		}
		clock.Advance(time.Hour)
	}
	out, status, err := orchestration.Result[string](ctx, e, "order-1")
	fmt.Println(out, status.State, err)
	// Output:
	// charge order-1 with idempotency key order-1/0/charge
	// refund order-1 at 2026-05-04 09:00:00
	// refunded completed <nil>
}
