package ordering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/todolist"
)

// Config configures a [System]. The zero value is usable: every field has a
// default.
type Config struct {
	// Clock stamps the order events and drives the cancel-order processor.
	// Default: the real clock. Tests and the demo pass a fake clock, and
	// the tick.Ticker publishing to Bus must use the same one.
	Clock clockwork.Clock
	// Bus receives the order events after they are stored, and delivers
	// the tick.MinuteHasPassed events that make the System cancel timed-out
	// orders. Default: a bus of the System's own, closed by Close.
	Bus *bus.Bus
	// ListName names the PendingOrders to-do list. Default DefaultListName.
	ListName string
	// Processor holds extra options for the cancel-order processor, such as
	// todolist.WithBatchSize or todolist.WithObserver.
	Processor []todolist.ProcessorOption
	// PerOrderTimeouts makes the System time out each due order in a
	// transaction of its own ([HandleCancelOrder]) instead of a batch of
	// them in the one transaction that takes the batch from the list,
	// decides it and records it ([HandleCancelOrders], the default). Both
	// decide the same; the batch is many times faster, and holds its
	// orders' to-do items (on SQLite the database's write lock) until it
	// commits, so a command changing one of its orders meanwhile waits
	// for it.
	PerOrderTimeouts bool
	// Logger reports order changes that were committed but could not be
	// published on Bus (see [Stats].Unpublished). Default: slog.Default().
	Logger *slog.Logger
}

// NewOrder is a cart a client confirms: what [System.Place] needs.
type NewOrder struct {
	ClientID string
	Items    []PricedItem
	// Timeout is how long the client has to pay.
	Timeout time.Duration
}

// Stats counts what a System did since Open: what its timeout handler did,
// and the changes it could not publish.
type Stats struct {
	// TimedOut counts orders cancelled because their deadline passed.
	TimedOut int64
	// Untouched counts due orders that decided nothing: paid or closed by
	// the time the handler loaded them.
	Untouched int64
	// Conflicts counts cancellations that lost their append to a concurrent
	// writer and were decided again on the reloaded order — resolved, not
	// failed. A batch ([HandleCancelOrders]) also counts here each attempt
	// that found another writer appending to the order at that moment.
	Conflicts int64
	// Unpublished counts commits of order changes — a command (a PlaceAll
	// batch counts once) or a timeout — that were committed with the to-do
	// list but could not be published on the bus, because a subscriber
	// failed. They stand: the command that made them returned
	// no error, so a client does not retry and pay twice. Each is also
	// logged to Config.Logger.
	Unpublished int64
}

// System is the ordering process wired on one database and bus: the event
// store with the PendingOrders projection in its append transaction, and
// [HandleCancelOrders] (or [HandleCancelOrder], see
// Config.PerOrderTimeouts) subscribed to tick.MinuteHasPassed. A tick.Ticker
// publishing to [System.Bus] makes time pass for it.
//
// A System is safe for concurrent use.
type System struct {
	db      *sqlx.DB
	clock   clockwork.Clock
	bus     *bus.Bus
	ownBus  bool
	store   *eventstore.Store
	pending *todolist.List
	cancel  *canceller
	sub     *bus.Subscription
	// unpublished is shared with cancel, so Stats counts both.
	unpublished *unpublished

	closeOnce sync.Once
	closeErr  error
}

// Open wires a System on db (SQLite or PostgreSQL, see eventstore.Open),
// creating the tables it needs. The caller keeps owning db and closes it
// after [System.Close].
func Open(ctx context.Context, db *sqlx.DB, cfg Config) (*System, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: database must not be nil", ErrInvalidConfig)
	}
	s := &System{db: db, clock: cfg.Clock, bus: cfg.Bus, unpublished: &unpublished{logger: cfg.Logger}}
	if s.unpublished.logger == nil {
		s.unpublished.logger = slog.Default()
	}
	if s.clock == nil {
		s.clock = clockwork.NewRealClock()
	}
	if cfg.ListName == "" {
		cfg.ListName = DefaultListName
	}
	pending, err := todolist.Open(ctx, db, cfg.ListName)
	if err != nil {
		return nil, fmt.Errorf("ordering: open: %w", err)
	}
	s.pending = pending
	if s.bus == nil {
		if s.bus, err = bus.New(); err != nil {
			return nil, fmt.Errorf("ordering: open: %w", err)
		}
		s.ownBus = true
	}
	if err := s.wire(ctx, cfg); err != nil {
		if s.ownBus {
			err = errors.Join(err, s.bus.Close(ctx))
		}
		return nil, err
	}
	return s, nil
}

func (s *System) wire(ctx context.Context, cfg Config) error {
	registry := eventstore.NewRegistry()
	if err := Register(registry); err != nil {
		return err
	}
	store, err := eventstore.Open(ctx, s.db, registry,
		eventstore.WithClock(s.clock),
		eventstore.WithInTransaction(InTransaction(NewPendingOrders(s.pending))),
		eventstore.WithPublisher(s.bus))
	if err != nil {
		return fmt.Errorf("ordering: open: %w", err)
	}
	s.store = store
	if s.cancel, err = newCanceller(store, s.clock, s.unpublished); err != nil {
		return err
	}
	handle := s.cancel.batchHandler
	if cfg.PerOrderTimeouts {
		handle = s.cancel.handler
	}
	handler, err := handle(s.pending, cfg.Processor...)
	if err != nil {
		return err
	}
	s.sub, err = bus.Subscribe(s.bus, handler, bus.Name("ordering.HandleCancelOrder"))
	if err != nil {
		return fmt.Errorf("ordering: open: subscribe the cancel-order handler: %w", err)
	}
	return nil
}

// Store returns the event store holding the orders.
func (s *System) Store() *eventstore.Store { return s.store }

// Pending returns the PendingOrders to-do list.
func (s *System) Pending() *todolist.List { return s.pending }

// Bus returns the bus the System publishes order events on and listens to
// for the passage of time.
func (s *System) Bus() *bus.Bus { return s.bus }

// Clock returns the System's clock.
func (s *System) Clock() clockwork.Clock { return s.clock }

// Stats returns what the timeout handler did since Open.
func (s *System) Stats() Stats {
	return Stats{
		TimedOut:    s.cancel.timedOut.Load(),
		Untouched:   s.cancel.untouched.Load(),
		Conflicts:   s.cancel.conflicts.Load(),
		Unpublished: s.unpublished.count.Load(),
	}
}

// Place initiates an order for o and returns its ID, a UUIDv7: time-ordered
// IDs keep the to-do list's and the event store's indexes appended to at
// the end rather than written all over.
func (s *System) Place(ctx context.Context, o NewOrder) (string, error) {
	ids, err := s.PlaceAll(ctx, []NewOrder{o})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// PlaceAll initiates every order of orders in one transaction — all are
// placed or none — and returns their IDs in the same order. It is how a bulk
// import or a load test places many orders without paying a commit for each.
// Once committed the orders are placed, even if publishing them fails (see
// [Stats].Unpublished).
func (s *System) PlaceAll(ctx context.Context, orders []NewOrder) ([]string, error) {
	now := s.clock.Now()
	ids := make([]string, len(orders))
	initiated := make([][]any, len(orders))
	for i, o := range orders {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("ordering: place order %d: new ID: %w", i, err)
		}
		ids[i] = id.String()
		if initiated[i], err = Initiate(ids[i], o.ClientID, o.Items, now, o.Timeout); err != nil {
			return nil, fmt.Errorf("ordering: place order %d: %w", i, err)
		}
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ordering: place %d orders: begin: %w", len(orders), err)
	}
	defer func() { _ = tx.Rollback() }()
	var recorded []eventstore.Recorded
	for i, events := range initiated {
		res, err := s.store.AppendTx(ctx, tx, StreamOf(ids[i]), eventstore.NoStream, events...)
		if err != nil {
			return nil, fmt.Errorf("ordering: place order %s: %w", ids[i], err)
		}
		recorded = append(recorded, res.Recorded...)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ordering: place %d orders: commit: %w", len(orders), err)
	}
	s.unpublished.check(ctx, s.store.Publish(ctx, recorded), slog.String("command", "place"), slog.Int("orders", len(orders)))
	return ids, nil
}

// Order returns the order with id as its events tell it; an order never
// placed is an error matching [ErrOrderNotFound].
func (s *System) Order(ctx context.Context, id string) (Order, error) {
	o, _, err := eventstore.Get(ctx, s.store, StreamOf(id), Order{}, Evolve)
	if err != nil {
		return Order{}, fmt.Errorf("ordering: load order %s: %w", id, err)
	}
	if o.Status == StatusNone {
		return Order{}, fmt.Errorf("%w: %s", ErrOrderNotFound, id)
	}
	return o, nil
}

// Pay records a payment of amount towards the order with id and returns the
// order after it. A payment that loses a race with a concurrent change is
// decided again on the reloaded order, so paying an order just cancelled
// fails with [ErrOrderClosed] rather than landing.
//
// Like every command, Pay returns no error once the change is committed,
// even if publishing it fails (see [Stats].Unpublished): an error means
// nothing was recorded, so retrying cannot pay twice.
func (s *System) Pay(ctx context.Context, id string, amount Money) (Order, error) {
	return s.update(ctx, id, "pay", func(o Order) ([]any, error) {
		return o.RecordPayment(amount, s.clock.Now())
	})
}

// Complete completes the paid order with id, which removes it from
// PendingOrders in the same transaction.
func (s *System) Complete(ctx context.Context, id string) (Order, error) {
	return s.update(ctx, id, "complete", func(o Order) ([]any, error) {
		return o.Complete(s.clock.Now())
	})
}

// Cancel cancels the order with id for reason; an order already closed stays
// as it is, and is returned without error. A paid order is not cancelled:
// the error matches [ErrOrderPaid].
func (s *System) Cancel(ctx context.Context, id, reason string) (Order, error) {
	return s.update(ctx, id, "cancel", func(o Order) ([]any, error) {
		if o.Status == StatusNone {
			return nil, ErrOrderNotFound
		}
		return o.Cancel(reason, s.clock.Now())
	})
}

func (s *System) update(ctx context.Context, id, doing string, decide func(Order) ([]any, error)) (Order, error) {
	res, err := eventstore.Update(ctx, s.store, StreamOf(id), Order{}, Evolve, decide, eventstore.WithRetries(conflictRetries))
	if errors.Is(err, eventstore.ErrPublish) {
		s.unpublished.check(ctx, err, slog.String("command", doing), slog.String("order", id))
		return res.State, nil
	}
	if err != nil {
		return res.State, fmt.Errorf("ordering: %s order %s: %w", doing, id, err)
	}
	return res.State, nil
}

// Close unsubscribes the timeout handler and, when the System created its own
// bus, closes it, waiting for what is queued as bus.Bus.Close does. Closing
// twice is harmless. It does not close the database.
func (s *System) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.sub.Unsubscribe()
		if s.ownBus {
			s.closeErr = s.bus.Close(ctx)
		}
	})
	return s.closeErr
}

// unpublished counts and logs order changes committed but not published.
// Retrying would not help the subscribers (the change stands, and deciding
// again decides nothing or something else), and failing the command would
// make the client retry a change already made.
type unpublished struct {
	count  atomic.Int64
	logger *slog.Logger
}

// check counts and logs err, the outcome of publishing one commit, which
// attrs describe, when it is not nil.
func (u *unpublished) check(ctx context.Context, err error, attrs ...slog.Attr) {
	if err == nil {
		return
	}
	u.count.Add(1)
	u.logger.LogAttrs(ctx, slog.LevelError, "ordering: change committed but not published", append(attrs, slog.Any("error", err))...)
}
