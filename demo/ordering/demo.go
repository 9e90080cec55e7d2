package ordering

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/tick"
)

// demoStart is when the demo's fake clock starts unless DemoConfig.Clock is
// given: a Sunday morning, 09:00 UTC, so the story reads the same every time.
var demoStart = time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC)

// DemoMaxOrders bounds DemoConfig.Orders.
const DemoMaxOrders = 1_000_000

// Limits of the demo's timeouts: each order gets a payment deadline between
// demoMinTimeout and demoMaxTimeout after it is placed.
const (
	demoMinTimeout = 3 * time.Minute
	demoMaxTimeout = 15 * time.Minute
	// Every demoLastMomentEvery-th paying client pays at the very last
	// moment: while the timeout handler is deciding to cancel the order.
	demoLastMomentEvery = 5
)

// DemoConfig configures [RunDemo]. The zero value runs the default story.
type DemoConfig struct {
	// Orders is how many orders are placed; default 20, at most
	// DemoMaxOrders.
	Orders int
	// PaidShare is the share of orders paid (and completed) before their
	// deadline, between 0 and 1; the rest time out. Zero means the
	// default, one half; pass NoneWillPay for none.
	PaidShare float64
	// Seed makes the deadlines and payment times reproducible; default 1.
	Seed uint64
	// Clock is the fake clock time passes on; default one at 09:00 UTC on
	// 29 March 2026.
	// The demo advances it minute by minute through a real tick.Ticker.
	Clock *clockwork.FakeClock
}

// NoneWillPay is the DemoConfig.PaidShare of a story where no client pays.
const NoneWillPay = -1

// Summary is what the demo did, as the bus told it.
type Summary struct {
	// Placed counts orders placed.
	Placed int
	// Paid counts orders paid in full, LastMoment of them while their
	// timeout was being decided.
	Paid, LastMoment int
	// Completed counts orders completed.
	Completed int
	// CancelledByTimeout counts orders cancelled because their deadline
	// passed.
	CancelledByTimeout int
	// ConflictsResolved counts cancellations that lost the race to a payment
	// and were decided again, correctly, on the reloaded order.
	ConflictsResolved int
	// Pending counts orders left on the PendingOrders list at the end: 0
	// unless something went wrong.
	Pending int
	// Elapsed is the simulated time the story took.
	Elapsed time.Duration
}

// RunDemo tells the ordering story on w: it opens a [System] on db, places
// orders, pays some of them, lets time pass minute by minute on a fake clock
// through a real tick.Ticker and bus, reports each minute in which something
// happened, and ends with a summary, which it also returns. A few payments
// are staged to land exactly while their order's timeout is being decided,
// to show the race resolved: between the handler's load of the order and
// its append, so the System times orders out one at a time
// (Config.PerOrderTimeouts). The default batch holds its orders' to-do
// items (on SQLite the database's write lock) in its transaction from
// before the load until its commit, so a completion made from inside it
// would wait for it for ever. Everything runs at the speed of the database:
// a simulated quarter of an hour with a few hundred orders takes well under a
// second.
//
// db must be empty of orders (a fresh SQLite file or PostgreSQL schema); the
// caller keeps owning it.
func RunDemo(ctx context.Context, w io.Writer, db *sqlx.DB, cfg DemoConfig) (Summary, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Summary{}, err
	}
	d := &demo{w: w, cfg: cfg, clock: cfg.Clock, start: cfg.Clock.Now()}
	if err := d.run(ctx, db); err != nil {
		return d.summary(), err
	}
	return d.summary(), nil
}

func (c DemoConfig) withDefaults() (DemoConfig, error) {
	switch {
	case c.Orders < 0 || c.Orders > DemoMaxOrders:
		return c, fmt.Errorf("%w: demo orders must be between 1 and %d, got %d", ErrInvalidConfig, DemoMaxOrders, c.Orders)
	case c.PaidShare != NoneWillPay && (c.PaidShare < 0 || c.PaidShare > 1):
		return c, fmt.Errorf("%w: demo paid share must be between 0 and 1, got %v", ErrInvalidConfig, c.PaidShare)
	}
	if c.Orders == 0 {
		c.Orders = 20
	}
	switch c.PaidShare {
	case 0:
		c.PaidShare = 0.5
	case NoneWillPay:
		c.PaidShare = 0
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewFakeClockAt(demoStart)
	}
	return c, nil
}

// demo is one run of the story.
type demo struct {
	w     io.Writer
	cfg   DemoConfig
	clock *clockwork.FakeClock
	start time.Time
	sys   *System
	err   error // the first write error; the story stops being told

	mu         sync.Mutex
	placed     int
	paid       int
	completed  int
	cancelled  int
	lastMoment int
	minute     demoCounts // what happened since the last report
	pending    int
}

// demoCounts counts what happened in a minute of the story.
type demoCounts struct{ paid, completed, cancelled, lastMoment int }

// plannedOrder is an order of the story and what its client will do.
type plannedOrder struct {
	NewOrder
	id         string
	payAt      time.Time // zero: never pays
	lastMoment bool      // pays while the timeout is being decided
}

func (d *demo) run(ctx context.Context, db *sqlx.DB) (err error) {
	// One order at a time: the staged payments below commit from inside
	// the handler (see RunDemo).
	sys, err := Open(ctx, db, Config{Clock: d.clock, PerOrderTimeouts: true})
	if err != nil {
		return err
	}
	d.sys = sys
	defer func() { err = errors.Join(err, sys.Close(context.WithoutCancel(ctx))) }()
	subs, err := d.listen(sys.Bus())
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range subs {
			s.Unsubscribe()
		}
	}()

	plan, err := d.place(ctx)
	if err != nil {
		return err
	}
	lastMoment := make(map[string]bool)
	for _, o := range plan {
		if o.lastMoment {
			lastMoment[o.id] = true
		}
	}
	// Staged last-moment payments: the client pays after the handler loaded
	// the order and before it appends the cancellation. Set before the
	// ticker starts, so no handler runs while it is being set.
	sys.cancel.beforeDecide = func(ctx context.Context, orderID string) error {
		if !lastMoment[orderID] {
			return nil
		}
		d.mu.Lock()
		d.lastMoment++
		d.minute.lastMoment++
		d.mu.Unlock()
		return d.payAndComplete(ctx, orderID)
	}
	// The cursors stay in memory: the demo's clock is not the world's,
	// and a cursor left in db at the story's date would make the first
	// "ticker run" on db catch up from it (a week of minutes, printed).
	ticker, err := tick.New(sys.Bus(), tick.NewMemoryStore(), tick.WithClock(d.clock), tick.WithUnits(tick.Minute))
	if err != nil {
		return fmt.Errorf("ordering: demo: %w", err)
	}
	if err := ticker.Start(ctx); err != nil {
		return fmt.Errorf("ordering: demo: start the ticker: %w", err)
	}
	defer func() { err = errors.Join(err, ticker.Stop(context.WithoutCancel(ctx))) }()

	return d.passTime(ctx, ticker, plan)
}

// listen subscribes the narrator to the order events the System publishes
// after each commit.
func (d *demo) listen(b *bus.Bus) ([]*bus.Subscription, error) {
	count := func(f func()) {
		d.mu.Lock()
		defer d.mu.Unlock()
		f()
	}
	var subs []*bus.Subscription
	for _, subscribe := range []func() (*bus.Subscription, error){
		func() (*bus.Subscription, error) {
			return bus.Subscribe(b, func(_ context.Context, e OrderInitiated) error {
				count(func() { d.placed++ })
				return nil
			})
		},
		func() (*bus.Subscription, error) {
			// Every client of the story pays in full at once.
			return bus.Subscribe(b, func(_ context.Context, e OrderPaymentRecorded) error {
				count(func() { d.paid++; d.minute.paid++ })
				return nil
			})
		},
		func() (*bus.Subscription, error) {
			return bus.Subscribe(b, func(_ context.Context, e OrderCompleted) error {
				count(func() { d.completed++; d.minute.completed++ })
				return nil
			})
		},
		func() (*bus.Subscription, error) {
			return bus.Subscribe(b, func(_ context.Context, e OrderCancelled) error {
				if e.Reason == ReasonTimedOut {
					count(func() { d.cancelled++; d.minute.cancelled++ })
				}
				return nil
			})
		},
	} {
		s, err := subscribe()
		if err != nil {
			for _, s := range subs {
				s.Unsubscribe()
			}
			return nil, fmt.Errorf("ordering: demo: subscribe the narrator: %w", err)
		}
		subs = append(subs, s)
	}
	return subs, nil
}

// place plans the story and places every order in one transaction.
func (d *demo) place(ctx context.Context) ([]plannedOrder, error) {
	rng := rand.New(rand.NewPCG(d.cfg.Seed, 0x0dde7))
	products := []PricedItem{
		{ProductID: "coffee beans", UnitPrice: 1250},
		{ProductID: "tea", UnitPrice: 690},
		{ProductID: "mug", UnitPrice: 900},
		{ProductID: "grinder", UnitPrice: 4500},
	}
	plan := make([]plannedOrder, d.cfg.Orders)
	orders := make([]NewOrder, d.cfg.Orders)
	paying := int(float64(d.cfg.Orders)*d.cfg.PaidShare + 0.5)
	for i := range plan {
		item := products[rng.IntN(len(products))]
		item.Quantity = 1 + rng.IntN(3)
		span := int64(demoMaxTimeout - demoMinTimeout)
		timeout := demoMinTimeout + time.Duration(rng.Int64N(span/int64(time.Second)))*time.Second
		plan[i].NewOrder = NewOrder{ClientID: fmt.Sprintf("client-%d", i+1), Items: []PricedItem{item}, Timeout: timeout}
		orders[i] = plan[i].NewOrder
	}
	// Which clients pay is drawn too, so the payers are not simply the first.
	for n, i := range rng.Perm(d.cfg.Orders)[:paying] {
		if (n+1)%demoLastMomentEvery == 0 {
			plan[i].lastMoment = true
			continue
		}
		// Pay at least a minute before the deadline, so the payment is in
		// before the tick that would cancel the order.
		window := plan[i].Timeout - time.Minute - 30*time.Second
		plan[i].payAt = d.start.Add(30*time.Second + time.Duration(rng.Int64N(int64(window))))
	}
	ids, err := d.sys.PlaceAll(ctx, orders)
	if err != nil {
		return nil, err
	}
	for i := range plan {
		plan[i].id = ids[i]
	}
	d.printf("%s  %d clients confirm their carts: %d orders placed, each to be paid within %v to %v.\n",
		d.stamp(), d.cfg.Orders, len(ids), demoMinTimeout, demoMaxTimeout)
	d.printf("%s  %d of them will pay (%d at the very last moment); the others will not.\n",
		d.stamp(), paying, paying/demoLastMomentEvery)
	d.printf("%s  A ticker publishes MinuteHasPassed every minute; on each, the unpaid orders past their deadline are cancelled.\n", d.stamp())
	return plan, nil
}

// passTime advances the clock a minute at a time until every deadline is
// behind, paying orders as planned and reporting each eventful minute.
func (d *demo) passTime(ctx context.Context, ticker *tick.Ticker, plan []plannedOrder) error {
	byPayment := make([]plannedOrder, 0, len(plan))
	var last time.Time
	for _, o := range plan {
		if !o.payAt.IsZero() {
			byPayment = append(byPayment, o)
		}
		if deadline := d.start.Add(o.Timeout); deadline.After(last) {
			last = deadline
		}
	}
	sort.Slice(byPayment, func(i, j int) bool { return byPayment[i].payAt.Before(byPayment[j].payAt) })
	end := tick.Next(tick.Minute, last, time.UTC)
	for d.clock.Now().Before(end) {
		if err := tick.AdvanceAndWait(ctx, d.clock, time.Minute, ticker); err != nil {
			return fmt.Errorf("ordering: demo: pass a minute: %w", err)
		}
		for len(byPayment) > 0 && !byPayment[0].payAt.After(d.clock.Now()) {
			if err := d.payAndComplete(ctx, byPayment[0].id); err != nil {
				return err
			}
			byPayment = byPayment[1:]
		}
		if err := d.report(ctx); err != nil {
			return err
		}
	}
	d.printf("%s  Every deadline is behind us.\n\n", d.stamp())
	s := d.summary()
	d.printf("Summary after %v of simulated time:\n", s.Elapsed)
	d.printf("  placed                %6d\n", s.Placed)
	d.printf("  paid                  %6d  (%d at the last moment)\n", s.Paid, s.LastMoment)
	d.printf("  completed             %6d\n", s.Completed)
	d.printf("  cancelled by timeout  %6d\n", s.CancelledByTimeout)
	d.printf("  conflicts resolved    %6d\n", s.ConflictsResolved)
	d.printf("  still pending         %6d\n", s.Pending)
	return d.err
}

// payAndComplete is a client paying an order in full, then the shop
// completing it.
func (d *demo) payAndComplete(ctx context.Context, id string) error {
	o, err := d.sys.Order(ctx, id)
	if err != nil {
		return err
	}
	if _, err := d.sys.Pay(ctx, id, o.Total-o.Paid); err != nil {
		return err
	}
	_, err = d.sys.Complete(ctx, id)
	return err
}

// report prints the minute's line when something happened in it.
func (d *demo) report(ctx context.Context) error {
	stats, err := d.sys.Pending().Stats(ctx, d.clock.Now())
	if err != nil {
		return fmt.Errorf("ordering: demo: %w", err)
	}
	d.mu.Lock()
	m := d.minute
	d.minute = demoCounts{}
	d.pending = stats.Pending
	d.mu.Unlock()
	var parts []string
	if n := m.paid - m.lastMoment; n > 0 {
		parts = append(parts, fmt.Sprintf("%s paid and completed", orders(n)))
	}
	if m.lastMoment > 0 {
		parts = append(parts, fmt.Sprintf("%s paid at the last moment, while being timed out: the cancellation lost the race, was decided again and dropped", orders(m.lastMoment)))
	}
	if m.cancelled > 0 {
		parts = append(parts, fmt.Sprintf("%s timed out and cancelled", orders(m.cancelled)))
	}
	if len(parts) == 0 {
		return nil
	}
	line := d.stamp() + "  " + strings.Join(parts, "; ")
	d.printf("%s; %d still pending.\n", line, stats.Pending)
	return nil
}

// orders says "1 order" or "n orders".
func orders(n int) string {
	if n == 1 {
		return "1 order"
	}
	return fmt.Sprintf("%d orders", n)
}

func (d *demo) summary() Summary {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := Summary{
		Placed: d.placed, Paid: d.paid, LastMoment: d.lastMoment, Completed: d.completed,
		CancelledByTimeout: d.cancelled, Pending: d.pending, Elapsed: d.clock.Since(d.start),
	}
	if d.sys != nil {
		s.ConflictsResolved = int(d.sys.Stats().Conflicts)
	}
	return s
}

func (d *demo) stamp() string {
	return d.clock.Now().Format("15:04")
}

func (d *demo) printf(format string, args ...any) {
	if d.err != nil {
		return
	}
	if _, err := fmt.Fprintf(d.w, format, args...); err != nil {
		d.err = fmt.Errorf("ordering: demo: write the story: %w", err)
	}
}
