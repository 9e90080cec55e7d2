package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	_ "github.com/mattn/go-sqlite3"

	"github.com/passage-of-time/passage/eventstore"
)

type CartConfirmed struct{ Items int }
type PaymentRecorded struct{ Amount int }

// printer stands in for the bus: it shows what is published after commit.
type printer struct{}

func (printer) Publish(_ context.Context, events ...any) error {
	for _, e := range events {
		fmt.Printf("published %T%+v\n", e, e)
	}
	return nil
}

func Example() {
	ctx := context.Background()
	// One connection: every connection to ":memory:" is its own database.
	db := sqlx.MustOpen("sqlite3", ":memory:")
	db.SetMaxOpenConns(1)
	defer db.Close()

	registry := eventstore.NewRegistry()
	_ = eventstore.Register[CartConfirmed](registry, "order.cart-confirmed")
	_ = eventstore.Register[PaymentRecorded](registry, "order.payment-recorded")
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC))
	store, err := eventstore.Open(ctx, db, registry, eventstore.WithClock(clock), eventstore.WithPublisher(printer{}))
	if err != nil {
		fmt.Println(err)
		return
	}

	res, err := store.Append(ctx, "order-1", eventstore.NoStream, CartConfirmed{Items: 3})
	fmt.Println("appended, stream at version", res.Version, err)

	// A second writer that also believed the order was new loses.
	_, err = store.Append(ctx, "order-1", eventstore.NoStream, CartConfirmed{Items: 1})
	fmt.Println(errors.Is(err, eventstore.ErrWrongExpectedVersion), err)

	_, err = store.Append(ctx, "order-1", eventstore.Exact(res.Version), PaymentRecorded{Amount: 42})
	fmt.Println("paid:", err)

	recorded, _ := store.Load(ctx, "order-1", 0)
	for _, r := range recorded {
		fmt.Println(r.Version, r.Type, r.RecordedAt.Format(time.Kitchen), r.Event)
	}
	// Output:
	// published eventstore_test.CartConfirmed{Items:3}
	// appended, stream at version 1 <nil>
	// true eventstore: stream "order-1": expected no stream, but it is at version 1
	// published eventstore_test.PaymentRecorded{Amount:42}
	// paid: <nil>
	// 1 order.cart-confirmed 9:00AM {3}
	// 2 order.payment-recorded 9:00AM {42}
}

// Update loads an aggregate, asks the decision for new events and appends
// them expecting the loaded version. Deciding nothing appends nothing.
func ExampleUpdate() {
	ctx := context.Background()
	db := sqlx.MustOpen("sqlite3", ":memory:")
	db.SetMaxOpenConns(1)
	defer db.Close()
	registry := eventstore.NewRegistry()
	_ = eventstore.Register[PaymentRecorded](registry, "order.payment-recorded")
	store, err := eventstore.Open(ctx, db, registry)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The aggregate: how much was paid.
	evolve := func(paid int, event any) int {
		if e, ok := event.(PaymentRecorded); ok {
			paid += e.Amount
		}
		return paid
	}
	// The decision: pay up to 100, and nothing once paid.
	payRest := func(paid int) ([]any, error) {
		if paid >= 100 {
			return nil, nil
		}
		return []any{PaymentRecorded{Amount: 100 - paid}}, nil
	}

	_, _ = store.Append(ctx, "order-7", eventstore.NoStream, PaymentRecorded{Amount: 30})
	for range 2 {
		res, err := eventstore.Update(ctx, store, "order-7", 0, evolve, payRest, eventstore.WithRetries(3))
		fmt.Printf("paid %d, version %d, appended %d, err %v\n", res.State, res.Version, len(res.Recorded), err)
	}
	// Output:
	// paid 100, version 2, appended 1, err <nil>
	// paid 100, version 2, appended 0, err <nil>
}
