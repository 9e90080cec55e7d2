package workflow_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/demo/workflow"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/todolist"
)

// reminder names the change: after 10 minutes without payment the
// customer is reminded, and the order waits 5 minutes more.
const reminder = "payment-reminder"

// awaitFunc is how an order version waits for its payment.
type awaitFunc func(orchestration.Context, workflow.Order) (workflow.Payment, bool, error)

// awaitOnce is the old code: 15 minutes, then the order is not paid.
func awaitOnce(ctx orchestration.Context, _ workflow.Order) (workflow.Payment, bool, error) {
	return orchestration.Await[workflow.Payment](ctx, workflow.SignalPaid, workflow.PaymentTimeout)
}

// awaitReminding is the new code: 10 minutes, a reminder, 5 minutes more.
func awaitReminding(ctx orchestration.Context, o workflow.Order) (workflow.Payment, bool, error) {
	p, paid, err := orchestration.Await[workflow.Payment](ctx, workflow.SignalPaid, 10*time.Minute)
	if err != nil || paid {
		return p, paid, err
	}
	if _, err := orchestration.Step(ctx, "remind", func(context.Context, orchestration.StepInfo) (bool, error) {
		return true, nil // an e-mail to the customer of o
	}); err != nil {
		return p, false, err
	}
	return orchestration.Await[workflow.Payment](ctx, workflow.SignalPaid, 5*time.Minute)
}

// The deploys of the change, each the code of one release.
var (
	// patched: new instances, and those not waiting yet, remind; those
	// already waiting when it is deployed wait their 15 minutes.
	patched awaitFunc = func(ctx orchestration.Context, o workflow.Order) (workflow.Payment, bool, error) {
		if orchestration.Patched(ctx, reminder) {
			return awaitReminding(ctx, o)
		}
		return awaitOnce(ctx, o)
	}
	// deprecated: once no running instance lacks the marker.
	deprecated awaitFunc = func(ctx orchestration.Context, o workflow.Order) (workflow.Payment, bool, error) {
		orchestration.DeprecatePatch(ctx, reminder)
		return awaitReminding(ctx, o)
	}
	// removed: once no running instance holds the marker either.
	removed awaitFunc = awaitReminding
)

// orderWith is the order workflow of workflow.Register with await as its
// wait for the payment: reserve, wait, ship — or release the stock.
func orderWith(w *workflow.Warehouse, await awaitFunc) func(orchestration.Context, workflow.Order) (workflow.Shipment, error) {
	return func(ctx orchestration.Context, o workflow.Order) (workflow.Shipment, error) {
		orchestration.Compensate(ctx, "release stock", func(c context.Context) error { return w.Release(c, o.ID) })
		if _, err := orchestration.Step(ctx, "reserve stock", func(c context.Context, info orchestration.StepInfo) (string, error) {
			return w.Reserve(c, info.Key, o.ID, o.Items)
		}); err != nil {
			return workflow.Shipment{}, err
		}
		payment, paid, err := await(ctx, o)
		if err != nil {
			return workflow.Shipment{}, err
		}
		if !paid {
			return workflow.Shipment{}, fmt.Errorf("%w: %s", workflow.ErrNotPaid, o.ID)
		}
		tracking, err := orchestration.Step(ctx, "ship", func(c context.Context, info orchestration.StepInfo) (string, error) {
			return w.Ship(c, info.Key, o.ID)
		})
		return workflow.Shipment{Tracking: tracking, Payment: payment.Reference}, err
	}
}

// shop is the example's world: one database, a fake clock, the
// warehouse, and the engine and processor of the release deployed last.
type shop struct {
	ctx       context.Context
	db        *sqlx.DB
	clock     *clockwork.FakeClock
	warehouse *workflow.Warehouse
	e         *orchestration.Engine
	p         *todolist.Processor
}

// openShop opens a shop on a SQLite file in a temporary directory, at
// 09:00; closing it removes them.
func openShop() (*shop, func()) {
	dir, err := os.MkdirTemp("", "order-patch")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlx.Open("sqlite3", "file:"+filepath.Join(dir, "orders.db")+"?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		log.Fatal(err)
	}
	s := &shop{ctx: context.Background(), db: db, clock: clockwork.NewFakeClockAt(time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC)),
		warehouse: workflow.NewWarehouse(map[string]int{"coffee": 10})}
	return s, func() { _ = db.Close(); _ = os.RemoveAll(dir) }
}

// release is the registration of the order workflow waiting with await.
func (s *shop) release(await awaitFunc) func(*orchestration.Engine) error {
	return func(e *orchestration.Engine) error {
		return orchestration.Register(e, workflow.Name, orderWith(s.warehouse, await))
	}
}

// engine opens an engine on the shop's database with a release
// registered, processing nothing: a candidate release to check.
func (s *shop) engine(register func(*orchestration.Engine) error) *orchestration.Engine {
	e, err := orchestration.New(s.ctx, s.db, orchestration.WithClock(s.clock))
	if err != nil {
		log.Fatal(err)
	}
	if err := register(e); err != nil {
		log.Fatal(err)
	}
	return e
}

// deploy makes a release the code that processes the instances.
func (s *shop) deploy(register func(*orchestration.Engine) error) {
	s.e = s.engine(register)
	var err error
	if s.p, err = s.e.Processor(); err != nil {
		log.Fatal(err)
	}
}

// tick moves the clock by d and processes what is due then.
func (s *shop) tick(d time.Duration) {
	s.clock.Advance(d)
	if _, err := s.p.Process(s.ctx, s.clock.Now()); err != nil {
		log.Fatal(err)
	}
}

func (s *shop) at() string { return s.clock.Now().Format("15:04") }

func (s *shop) place(id string) {
	o := workflow.Order{ID: id, Items: []ordering.PricedItem{{ProductID: "coffee", Quantity: 1, UnitPrice: 1250}}, Amount: 1250}
	if _, err := workflow.Place(s.ctx, s.e, o); err != nil {
		log.Fatal(err)
	}
}

func (s *shop) pay(id string) {
	if err := workflow.Pay(s.ctx, s.e, id, workflow.Payment{Reference: "card-" + id, Amount: 1250}); err != nil {
		log.Fatal(err)
	}
}

// running lists the running instances q keeps, or says none.
func (s *shop) running(q orchestration.InstanceQuery) string {
	q.State, q.Limit = orchestration.Running, orchestration.MaxInstancesRead
	statuses, _, err := orchestration.ReadInstances(s.ctx, s.db, q)
	if err != nil {
		log.Fatal(err)
	}
	ids := []string{}
	for _, st := range statuses {
		ids = append(ids, st.Instance)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, " ")
}

// show prints where an order is, and which side of the patch its
// history says it is on.
func (s *shop) show(id string) {
	out, st, err := orchestration.Result[workflow.Shipment](s.ctx, s.e, id)
	side := "no marker"
	if st.HasPatch(reminder) {
		side = "new branch"
	} else if len(st.OldBranches) > 0 {
		side = "old branch"
	}
	switch {
	case err == nil:
		fmt.Printf("%s  %s: shipped as %s, paid by %s (%s)\n", s.at(), id, out.Tracking, out.Payment, side)
	case st.State == orchestration.Running:
		fmt.Printf("%s  %s: waits for its payment until %s (%s)\n", s.at(), id, st.WaitingUntil.Format("15:04"), side)
	default:
		fmt.Printf("%s  %s: %s, %s (%s)\n", s.at(), id, st.State, st.Error, side)
	}
}

// A change to the order workflow deployed over running orders, and the
// sequence that retires it: patch → all old instances done → deprecate →
// remove. Ada and Cy wait for their payment when the reminder is
// deployed and keep their 15 minutes; Bob, placed after, is reminded at
// 10. Each step of the sequence is taken when the inspection says so;
// taking one too early is caught by Replay before the deploy. (Ada shows
// "no marker" until she wakes under the patch: until then her history
// cannot say she is on the old branch.)
func Example_patch() {
	s, done := openShop()
	defer done()
	s.deploy(func(e *orchestration.Engine) error { return workflow.Register(e, s.warehouse) }) // the code as it is
	s.place("ada")
	s.place("cy")
	s.tick(0)

	s.deploy(s.release(patched))
	s.clock.Advance(time.Minute)
	s.place("bob")
	s.tick(0)
	s.show("ada")
	s.show("bob")
	fmt.Printf("%s  running without the patch: %s; with it: %s\n", s.at(),
		s.running(orchestration.InstanceQuery{WithoutPatch: reminder}), s.running(orchestration.InstanceQuery{Patch: reminder}))
	fmt.Printf("%s  removing the patch now: %v\n", s.at(), s.engine(s.release(removed)).Replay(s.ctx, "bob"))

	s.tick(4 * time.Minute)
	s.pay("cy")
	s.tick(0)
	s.show("cy")
	s.tick(6 * time.Minute) // bob's 10 minutes are over: reminded, 5 more
	s.show("bob")
	s.tick(time.Minute)
	s.pay("bob")
	s.tick(0)
	s.show("bob")
	s.tick(3 * time.Minute)
	s.show("ada")

	fmt.Printf("%s  running without the patch: %s: deploy DeprecatePatch\n", s.at(), s.running(orchestration.InstanceQuery{WithoutPatch: reminder}))
	s.deploy(s.release(deprecated))
	s.place("dee")
	s.tick(0)
	fmt.Printf("%s  running with the patch: %s: remove it; dee replays under the removal: %v\n", s.at(),
		s.running(orchestration.InstanceQuery{Patch: reminder}), s.engine(s.release(removed)).Replay(s.ctx, "dee"))
	s.deploy(s.release(removed))
	s.tick(4 * time.Minute)
	s.pay("dee")
	s.tick(0)
	s.show("dee")
	// Output:
	// 09:01  ada: waits for its payment until 09:15 (no marker)
	// 09:01  bob: waits for its payment until 09:11 (new branch)
	// 09:01  running without the patch: ada cy; with it: bob
	// 09:01  removing the patch now: orchestration: replay bob: orchestration: the history does not match the function: the code asks for Await "paid" where the history (event 2 of its decisions) has the marker of patch "payment-reminder": the instance took the new branch of patch "payment-reminder" here, so the code must ask Patched(ctx, "payment-reminder") or DeprecatePatch(ctx, "payment-reminder") here as long as a running instance holds its marker
	// 09:05  cy: shipped as parcel-1, paid by card-cy (old branch)
	// 09:11  bob: waits for its payment until 09:16 (new branch)
	// 09:12  bob: shipped as parcel-2, paid by card-bob (new branch)
	// 09:15  ada: failed, workflow: order not paid in time: ada (old branch)
	// 09:15  running without the patch: none: deploy DeprecatePatch
	// 09:15  running with the patch: none: remove it; dee replays under the removal: <nil>
	// 09:19  dee: shipped as parcel-3, paid by card-dee (no marker)
}
