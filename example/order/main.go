package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/example/internal/demodb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "order:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	flags := flag.NewFlagSet("order", flag.ContinueOnError)
	orders := flags.Int("orders", 20, fmt.Sprintf("how many orders are placed, 1 to %d", ordering.DemoMaxOrders))
	paid := flags.Float64("paid", 0.5, "share of orders paid before their deadline, 0 to 1")
	seed := flags.Uint64("seed", 1, "seed of the deadlines and payment times")
	dsn := flags.String("db", "", "SQLite file or postgres:// DSN of an empty database (default: a temporary SQLite file)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	// Checked here because the demo's configuration takes 0 to mean its
	// default, which the flag already provides.
	if *orders < 1 || *orders > ordering.DemoMaxOrders {
		return fmt.Errorf("-orders %d: must be between 1 and %d", *orders, ordering.DemoMaxOrders)
	}
	db, closeDB, err := demodb.Open(ctx, *dsn, "orders.db")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeDB()) }()
	cfg := ordering.DemoConfig{Orders: *orders, PaidShare: *paid, Seed: *seed}
	if *paid == 0 {
		cfg.PaidShare = ordering.NoneWillPay
	}
	_, err = ordering.RunDemo(ctx, stdout, db.DB, cfg)
	return err
}
