package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/passage-of-time/passage/example/order/ordering"
	"github.com/passage-of-time/passage/internal/sqldb"
)

func demoCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "demo", "[--orders 20] [--paid 0.5] [--seed 1] [--db empty.db]")
	orders := fs.Int("orders", 20, fmt.Sprintf("how many orders are placed (1–%d)", ordering.DemoMaxOrders))
	paid := fs.Float64("paid", 0.5, "share of orders paid before their deadline, 0 to 1")
	seed := fs.Uint64("seed", 1, "seed of the deadlines and payment times")
	dsn := fs.String("db", "", "new SQLite file, or SQLite file or postgres:// DSN of an empty database: the demo refuses one that holds any table, even an earlier demo's (default: a temporary SQLite file, removed afterwards)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *orders < 1 || *orders > ordering.DemoMaxOrders {
		return usagef("--orders %d: must be between 1 and %d", *orders, ordering.DemoMaxOrders)
	}
	// NaN compares false with everything: check what is in range.
	if !(*paid >= 0 && *paid <= 1) {
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
	if err := refuseNonEmpty(ctx, *dsn); err != nil {
		return err
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
	if err != nil && ctx.Err() != nil {
		// Whatever the signal interrupted (a wait, a commit) is no news:
		// the story stopped, one quiet line says so.
		return interruptedError{"stopped by a signal before the end of the story"}
	}
	return err
}

// refuseNonEmpty returns an error unless dsn names a SQLite file that does
// not exist yet or a database without tables. The demo writes orders,
// cursors and to-do items with made-up times; in a database that holds
// anything — a real ticker's cursors, or an earlier demo's orders, which
// would make the story come out wrong — it must write nothing. The check
// opens the database read-only, so a refused file is left as it was.
func refuseNonEmpty(ctx context.Context, dsn string) error {
	if !sqldb.IsPostgresDSN(dsn) {
		path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	db, err := openReadOnly(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := tablesIn(ctx, db, db.Dialect)
	if err != nil {
		return fmt.Errorf("--db %s: %w", redact(dsn), err)
	}
	if len(tables) > 0 {
		names := make([]string, 0, len(tables))
		for name := range tables {
			names = append(names, name)
		}
		sort.Strings(names)
		return fmt.Errorf("--db %s: not empty (tables %s): the demo writes only into a new file or an empty database; nothing was written", redact(dsn), strings.Join(names, ", "))
	}
	return nil
}
