package natsjs_test

import (
	"context"
	"log"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/tick"
)

// The time service: one ticker, leased among its replicas, stores each
// minute and hour on a stream. The stream's duplicate window is at least
// the lease TTL, so boundaries a new leader emits again are stored once.
// (It needs a NATS server with JetStream, so it is compiled, not run.)
func ExampleNewPublisher() {
	ctx := context.Background()
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	const leaseTTL = time.Minute
	if _, err := natsjs.EnsureStream(ctx, js, "PASSAGE_TIME", "passage.time", natsjs.WithDuplicateWindow(2*leaseTTL)); err != nil {
		log.Fatal(err)
	}
	pub, err := natsjs.NewPublisher(ctx, js, "passage.time")
	if err != nil {
		log.Fatal(err) // no server, no stream: before the ticker starts
	}
	ticker, err := tick.New(pub, tick.NewMemoryStore(), // a SQL store and WithLease in production
		tick.WithUnits(tick.Minute, tick.Hour))
	if err != nil {
		log.Fatal(err)
	}
	if err := ticker.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = ticker.Stop(ctx) }()
}

// An order service that runs no ticker: the minutes come from the stream
// onto its bus, where a handler bills each hour exactly once — its row
// and the inbox's are written in one transaction.
func ExampleNewConsumer() {
	ctx := context.Background()
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlx.Open("sqlite3", "orders.db")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	inbox, err := natsjs.OpenInbox(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	billHour, err := natsjs.Once(inbox, "billing", func(ctx context.Context, tx *sqlx.Tx, h tick.HourHasPassed) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO invoices (hour) VALUES (?)`, h.At.Unix())
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	b, err := bus.New()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := bus.Subscribe(b, billHour); err != nil {
		log.Fatal(err)
	}
	// todolist.Handle[tick.MinuteHasPassed](…) subscribes here unchanged.

	consumer, err := natsjs.NewConsumer(js, "passage.time", "orders", b)
	if err != nil {
		log.Fatal(err)
	}
	if err := consumer.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = consumer.Stop(ctx) }()
}

// Stored events out: each append writes its events to the outbox in its
// own transaction, and a relay publishes them once committed, keyed
// "<stream>/<version>", from a checkpoint of its own.
func ExampleRecordEvents() {
	ctx := context.Background()
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlx.Open("sqlite3", "orders.db")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if _, err := natsjs.EnsureStream(ctx, js, "ORDERS", "orders.events"); err != nil {
		log.Fatal(err)
	}
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	type OrderPlaced struct{ Order string }
	registry := eventstore.NewRegistry()
	if err := eventstore.Register[OrderPlaced](registry, "OrderPlaced"); err != nil {
		log.Fatal(err)
	}
	store, err := eventstore.Open(ctx, db, registry, eventstore.WithInTransaction(natsjs.RecordEvents(ob)))
	if err != nil {
		log.Fatal(err)
	}
	sink, err := natsjs.NewEventSink(ctx, js, "orders.events")
	if err != nil {
		log.Fatal(err)
	}
	relay, err := outbox.NewRelay(ob, "nats", sink.Deliver)
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = relay.Run(ctx, nil) }()

	// Published on orders.events.OrderPlaced with Nats-Msg-Id order-1/1.
	if _, err := store.Append(ctx, "order-1", eventstore.NoStream, OrderPlaced{Order: "order-1"}); err != nil {
		log.Fatal(err)
	}
	relay.Notify()
}
