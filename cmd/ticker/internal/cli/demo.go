package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/passage-of-time/passage/example/order/ordering"
)

func demoCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "demo", "[--orders 20] [--paid 0.5] [--seed 1] [--db empty.db]")
	orders := fs.Int("orders", 20, fmt.Sprintf("how many orders are placed (1–%d)", ordering.DemoMaxOrders))
	paid := fs.Float64("paid", 0.5, "share of orders paid before their deadline, 0 to 1")
	seed := fs.Uint64("seed", 1, "seed of the deadlines and payment times")
	dsn := fs.String("db", "", "SQLite file or postgres:// DSN of an empty database (default: a temporary SQLite file, removed afterwards)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *orders < 1 || *orders > ordering.DemoMaxOrders {
		return usagef("--orders %d: must be between 1 and %d", *orders, ordering.DemoMaxOrders)
	}
	if *paid < 0 || *paid > 1 {
		return usagef("--paid %g: must be between 0 and 1", *paid)
	}
	if *dsn == "" {
		dir, err := os.MkdirTemp("", "passage-demo")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		*dsn = filepath.Join(dir, "demo.db")
	}
	db, err := openDB(ctx, *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg := ordering.DemoConfig{Orders: *orders, PaidShare: *paid, Seed: *seed}
	if *paid == 0 {
		cfg.PaidShare = ordering.NoneWillPay
	}
	_, err = ordering.RunDemo(ctx, env.Stdout, db.DB, cfg)
	return err
}
