package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/demo/workflow"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// workflowDemoDB is where "demo --workflow" leaves its instances unless
// --db says otherwise: a file in the working directory, kept, so that the
// workflow commands can be tried on it.
const workflowDemoDB = "orders.db"

// demoConfig is "ticker demo" validated: the to-do list story of
// ordering.RunDemo, or with workflow the story of the ordering process as
// durable workflows, told in db ("" for a temporary file).
type demoConfig struct {
	story    ordering.DemoConfig
	workflow bool
	db       database
}

func demoCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "demo [--orders 20] [--paid 0.5] [--seed 1] [--db empty.db] | --workflow [--db orders.db]",
		Short: "run the ordering example end to end on an accelerated clock",
		Args:  noArgs,
	}
	fs := c.Flags()
	orders := fs.Int("orders", 20, fmt.Sprintf("how many orders are placed (1–%d)", ordering.DemoMaxOrders))
	paid := fs.Float64("paid", 0.5, "share of orders paid before their deadline, 0 to 1")
	seed := fs.Uint64("seed", 1, "seed of the deadlines and payment times")
	dbf := addDemoDB(c, env, "new SQLite file, or SQLite file or postgres:// DSN of an empty database: the demo refuses one that holds any table, even an earlier demo's (default: a temporary SQLite file, removed afterwards; with --workflow, "+workflowDemoDB+", kept)")
	asWorkflows := fs.Bool("workflow", false, "run the ordering process as durable workflows instead, and leave the instances in --db for \"ticker workflow\" to work on")
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg := demoConfig{workflow: *asWorkflows, story: ordering.DemoConfig{Orders: *orders, PaidShare: *paid, Seed: *seed}}
		if *asWorkflows {
			var storyFlags []string
			for _, name := range []string{"orders", "paid", "seed"} {
				if c.Flags().Changed(name) {
					storyFlags = append(storyFlags, "--"+name)
				}
			}
			if len(storyFlags) > 0 {
				return usagef("%s: shapes the to-do list story, not --workflow's", strings.Join(storyFlags, ", "))
			}
		} else if err := checkStory(cfg.story); err != nil {
			return err
		}
		var err error
		if cfg.db, err = dbf.database(); err != nil {
			return err
		}
		return demo(c.Context(), env, cfg)
	}
	return c
}

// checkStory refuses a story out of range.
func checkStory(story ordering.DemoConfig) error {
	if story.Orders < 1 || story.Orders > ordering.DemoMaxOrders {
		return usagef("--orders %d: must be between 1 and %d", story.Orders, ordering.DemoMaxOrders)
	}
	// NaN compares false with everything: check what is in range.
	if !(story.PaidShare >= 0 && story.PaidShare <= 1) {
		return usagef("--paid %g: must be between 0 and 1", story.PaidShare)
	}
	return nil
}

// demo tells the story cfg asks for.
func demo(ctx context.Context, env Env, cfg demoConfig) error {
	if cfg.workflow {
		if cfg.db.dsn == "" {
			cfg.db.dsn = workflowDemoDB
		}
		return workflowDemo(ctx, env, cfg.db)
	}
	if cfg.db.dsn == "" {
		dir, err := os.MkdirTemp("", "passage-demo")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		cfg.db.dsn = filepath.Join(dir, "demo.db")
	}
	if err := refuseNonEmpty(ctx, cfg.db); err != nil {
		return err
	}
	db, err := cfg.db.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if cfg.story.PaidShare == 0 {
		cfg.story.PaidShare = ordering.NoneWillPay
	}
	_, err = ordering.RunDemo(ctx, env.Stdout, db.DB, cfg.story)
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
func refuseNonEmpty(ctx context.Context, dsn database) error {
	if !sqldb.IsPostgresDSN(dsn.dsn) {
		path, _, _ := strings.Cut(strings.TrimPrefix(dsn.dsn, "file:"), "?")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	db, err := dsn.readOnly(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := sqldb.Tables(ctx, db)
	if err != nil {
		return fmt.Errorf("--db %s: %w", dsn, err)
	}
	if len(tables) > 0 {
		names := make([]string, 0, len(tables))
		for name := range tables {
			names = append(names, name)
		}
		sort.Strings(names)
		return fmt.Errorf("--db %s: not empty (tables %s): the demo writes only into a new file or an empty database; nothing was written", dsn, strings.Join(names, ", "))
	}
	return nil
}

// workflowDemoStart is when the workflow demo's fake clock starts: the
// ordering demo's Sunday morning, so that both stories read the same every
// time.
var workflowDemoStart = time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC)

// workflowDemoEnd is how long the workflow demo lets time pass: long
// enough for the first orders to end every way an order can, short enough
// that the last two still await their payment.
const workflowDemoEnd = 20 * time.Minute

// workflowDemoStep is what the shop or a client does at a minute of the
// workflow demo.
type workflowDemoStep struct {
	at     time.Duration // after workflowDemoStart
	places []string      // the orders it places, one cup of coffee more each
	say    string
	action func(ctx context.Context, e *orchestration.Engine) error
}

// workflowDemoSteps is the workflow demo's plan.
var workflowDemoSteps = []workflowDemoStep{
	{at: 0, places: []string{"order-1", "order-2", "order-3"},
		say: "order-1, order-2 and order-3 placed: each reserves its coffee, then awaits its payment for " + workflow.PaymentTimeout.String() + "."},
	{at: 4 * time.Minute, say: "order-1 paid: the payment is a signal, taken at the next tick.",
		action: func(ctx context.Context, e *orchestration.Engine) error {
			return workflow.Pay(ctx, e, "order-1", workflow.Payment{Reference: "card-1", Amount: workflowDemoCup})
		}},
	{at: 6 * time.Minute, say: "order-3 cancelled by the shop: its compensation releases the coffee at the next tick.",
		action: func(ctx context.Context, e *orchestration.Engine) error { return e.Cancel(ctx, "order-3") }},
	{at: 10 * time.Minute, places: []string{"order-4"}, say: "order-4 placed."},
	{at: 12 * time.Minute, places: []string{"order-5"}, say: "order-5 placed."},
}

// workflowDemoCup is the price of the demo's every order: a cup of coffee.
const workflowDemoCup ordering.Money = 250

// workflowDemo tells the ordering story as durable workflows
// (demo/workflow) on a fake clock driven minute by minute through
// a real ticker and bus, and leaves the instances in dsn: one shipped, one
// not paid in time, one cancelled, two awaiting their payment. The
// narration comes from the instances' statuses after each minute, not from
// the plan, so it says what the engine recorded.
func workflowDemo(ctx context.Context, env Env, dsn database) (err error) {
	if err := refuseNonEmpty(ctx, dsn); err != nil {
		return err
	}
	db, err := dsn.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	clock := clockwork.NewFakeClockAt(workflowDemoStart)
	e, err := orchestration.New(ctx, db.DB, orchestration.WithClock(clock))
	if err != nil {
		return err
	}
	if err := workflow.Register(e, workflow.NewWarehouse(map[string]int{"coffee": 20})); err != nil {
		return err
	}
	p, err := e.Processor()
	if err != nil {
		return err
	}
	b, err := bus.New()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.Close(context.WithoutCancel(ctx))) }()
	if _, err := bus.Subscribe(b, todolist.Handler[tick.MinuteHasPassed](p)); err != nil {
		return err
	}
	// In memory, as ordering.RunDemo's: the story's clock is not the
	// world's, and a cursor left at its date would make the first "ticker
	// run" on dsn catch up from it (a week of minutes, printed).
	ticker, err := tick.New(b, tick.NewMemoryStore(), tick.WithClock(clock), tick.WithUnits(tick.Minute))
	if err != nil {
		return err
	}
	if err := ticker.Start(ctx); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ticker.Stop(context.WithoutCancel(ctx))) }()

	n := &workflowNarrator{w: env.Stdout, e: e, clock: clock, seen: map[string]orchestration.Status{}}
	steps := workflowDemoSteps
	for elapsed := time.Duration(0); elapsed <= workflowDemoEnd; elapsed += time.Minute {
		if elapsed > 0 {
			if err := tick.AdvanceAndWait(ctx, clock, time.Minute, ticker); err != nil {
				if ctx.Err() != nil {
					return interruptedError{"stopped by a signal before the end of the story"}
				}
				return err
			}
			if err := n.narrate(ctx); err != nil {
				return err
			}
		}
		for ; len(steps) > 0 && steps[0].at == elapsed; steps = steps[1:] {
			for i, id := range steps[0].places {
				cups := i + 1
				if _, err := workflow.Place(ctx, e, workflow.Order{ID: id, Amount: ordering.Money(cups) * workflowDemoCup,
					Items: []ordering.PricedItem{{ProductID: "coffee", Quantity: cups, UnitPrice: workflowDemoCup}}}); err != nil {
					return err
				}
				n.ids = append(n.ids, id)
			}
			if steps[0].action != nil {
				if err := steps[0].action(ctx, e); err != nil {
					return err
				}
			}
			n.printf("%s  %s\n", n.stamp(), steps[0].say)
		}
	}
	n.printf("%s  The story stops here, with order-4 and order-5 awaiting their payment.\n\n", n.stamp())
	n.try(dsn)
	return n.err
}

// try says where the instances are and which commands to try on them.
func (n *workflowNarrator) try(dsn database) {
	db0 := dsn.String()
	if strings.ContainsAny(db0, " '\"$&;|<>()") {
		db0 = "'" + strings.ReplaceAll(db0, "'", `'\''`) + "'"
	}
	n.printf("The instances are in %s. Try:\n", dsn)
	n.printf("  ticker workflow list --db %s\n", db0)
	n.printf("  ticker workflow show --db %s order-2\n", db0)
	n.printf("  ticker workflow signal --db %s order-4 paid --payload '{\"Reference\": \"card-4\", \"Amount\": %d}'\n", db0, workflowDemoCup)
	n.printf("  ticker workflow cancel --db %s order-5\n", db0)
	n.printf("What drives them is the program that registers their code: this demo, now ended.\n")
	n.printf("\"ticker run\" publishes the passage of time and delivers records; it runs no workflow\n")
	n.printf("code, so a signal or a cancel recorded here waits for that program. In your own program,\n")
	n.printf("orchestration.New, Register and Engine.Processor subscribed to tick.MinuteHasPassed drive\n")
	n.printf("them (demo/workflow, docs/workflows.md).\n")
}

// workflowNarrator tells what became of the demo's instances.
type workflowNarrator struct {
	w     io.Writer
	e     *orchestration.Engine
	clock clockwork.Clock
	ids   []string                        // the instances placed so far
	seen  map[string]orchestration.Status // each one's status at the last narration
	err   error                           // the first write error
}

// narrate prints a line for each instance whose state changed, or which
// began to await its payment, since the last narration.
func (n *workflowNarrator) narrate(ctx context.Context) error {
	for _, id := range n.ids {
		st, err := n.e.Status(ctx, id)
		if err != nil {
			return err
		}
		before := n.seen[id]
		n.seen[id] = st
		switch {
		case st.State == orchestration.Running && !st.WaitingUntil.IsZero() && before.WaitingUntil.IsZero():
			n.printf("%s  %s reserved its coffee; awaits its payment until %s.\n", n.stamp(), id, st.WaitingUntil.Format("15:04"))
		case st.State == before.State:
		case st.State == orchestration.Completed:
			shipment, _, err := orchestration.Result[workflow.Shipment](ctx, n.e, id)
			if err != nil {
				return err
			}
			n.printf("%s  %s shipped as %s: completed.\n", n.stamp(), id, shipment.Tracking)
		case workflow.NotPaid(st):
			n.printf("%s  %s not paid within %s: failed, its coffee released.\n", n.stamp(), id, workflow.PaymentTimeout)
		case st.State == orchestration.Cancelled:
			n.printf("%s  %s cancelled, its coffee released.\n", n.stamp(), id)
		case st.State != orchestration.Running:
			n.printf("%s  %s %s: %s\n", n.stamp(), id, st.State, st.Error)
		}
	}
	return n.err
}

func (n *workflowNarrator) stamp() string { return n.clock.Now().Format("15:04") }

func (n *workflowNarrator) printf(format string, args ...any) {
	if n.err == nil {
		_, n.err = fmt.Fprintf(n.w, format, args...)
	}
}
