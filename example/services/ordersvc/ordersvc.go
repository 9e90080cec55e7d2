package ordersvc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/example/internal/demodb"
	"github.com/passage-of-time/passage/natsjs"
)

// Run runs the order service: it places the demo's orders, reads the
// passage of time and the time service's schedule runs from their
// streams, and returns once no order is pending and a run was reported,
// or ctx ends. args are its flags:
//
//	-nats URL       the NATS server (default nats://127.0.0.1:4222)
//	-prefix SUBJ    the time service's subjects' prefix (default services.time)
//	-durable NAME   the durable consumer's name, this service's position in
//	                the stream (default orders)
//	-runs-prefix S  the time service's schedule runs' prefix (default
//	                services.runs)
//	-runs-durable N the durable consumer of the runs, and its inbox's
//	                name (default orders-report)
//	-db DSN         SQLite file or postgres:// DSN of an empty database
//	                (default: a temporary SQLite file)
//	-timeout D      how long a client has to pay (default 3m)
//	-follow         set the service's clock to each minute from the stream:
//	                for a time service on a simulated clock
//	-start TIME     with -follow, the clock's start, RFC 3339 (default: the
//	                current minute)
func Run(ctx context.Context, args []string, w io.Writer) (err error) {
	flags := flag.NewFlagSet("orders", flag.ContinueOnError)
	flags.SetOutput(w)
	url := flags.String("nats", nats.DefaultURL, "the NATS server")
	prefix := flags.String("prefix", "services.time", "the time service's subjects' prefix")
	durable := flags.String("durable", "orders", "the durable consumer's name")
	runsPrefix := flags.String("runs-prefix", "services.runs", "the time service's schedule runs' prefix")
	runsDurable := flags.String("runs-durable", "orders-report", "the durable consumer of the runs, and its inbox's name")
	dsn := flags.String("db", "", "SQLite file or postgres:// DSN of an empty database (default: a temporary SQLite file)")
	timeout := flags.Duration("timeout", 3*time.Minute, "how long a client has to pay")
	follow := flags.Bool("follow", false, "set the clock to each minute from the stream (a time service on a simulated clock)")
	start := flags.String("start", "", "with -follow, the clock's start, RFC 3339 (default: the current minute)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *timeout <= 0 {
		return fmt.Errorf("-timeout %v: must be positive", *timeout)
	}
	var clock clockwork.Clock = clockwork.NewRealClock()
	var fake *clockwork.FakeClock
	if *follow {
		from := time.Now().UTC().Truncate(time.Minute)
		if *start != "" {
			if from, err = time.Parse(time.RFC3339, *start); err != nil {
				return fmt.Errorf("-start: %w", err)
			}
		}
		fake = clockwork.NewFakeClockAt(from)
		clock = fake
	}

	nc, err := nats.Connect(*url, nats.Name("passage order service"))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	db, closeDB, err := demodb.Open(ctx, *dsn, "orders.db")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeDB()) }()
	sys, err := ordering.Open(ctx, db.DB, ordering.Config{Clock: clock})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sys.Close(context.WithoutCancel(ctx))) }()

	s := &service{w: w, clock: clock, sys: sys, clients: map[string]string{}, pending: -1, done: make(chan struct{})}
	subs, err := s.listen()
	if err != nil {
		return err
	}
	defer func() {
		for _, sub := range subs {
			sub.Unsubscribe()
		}
	}()
	if err := s.place(ctx, *timeout); err != nil {
		return err
	}

	consumer, err := natsjs.NewConsumer(js, *prefix, *durable, &minutes{clock: fake, local: sys.Bus(), after: s.minutePassed},
		natsjs.WithLogger(slog.New(slog.NewTextHandler(w, nil))))
	if err != nil {
		return err
	}
	if err := consumer.Start(ctx); err != nil {
		return err
	}
	s.printf("%s  reading %s.> as the durable consumer %q\n", stamp(clock.Now()), *prefix, *durable)
	reports, err := startReports(ctx, s, db.DB, js, *runsPrefix, *runsDurable)
	if err != nil {
		return errors.Join(err, consumer.Stop(context.WithoutCancel(ctx)))
	}
	s.printf("%s  reading %s.> as the durable consumer %q, each run once through its inbox\n", stamp(clock.Now()), *runsPrefix, *runsDurable)
	select {
	case <-s.done:
	case <-ctx.Done():
	}
	if err := errors.Join(consumer.Stop(context.WithoutCancel(ctx)), reports.stop()); err != nil {
		return err
	}
	left, err := sys.Pending().Stats(context.WithoutCancel(ctx), clock.Now())
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	end := "done"
	if !s.closed {
		end = "interrupted"
	}
	fmt.Fprintf(w, "%s: %d paid and completed, %d cancelled by timeout, %d pending, %d report(s)\n", end, s.completed, s.cancelled, left.Pending, s.reported)
	return nil
}

// service is the demo's story: who ordered what, and what happened.
type service struct {
	w     io.Writer
	clock clockwork.Clock
	sys   *ordering.System

	mu                   sync.Mutex
	clients              map[string]string // order id → client
	completed, cancelled int
	pending              int // -1 until a minute was read
	reported             int
	done                 chan struct{}
	closed               bool
}

// place places alice's and bob's orders; alice pays and her order is
// completed, bob never pays.
func (s *service) place(ctx context.Context, timeout time.Duration) error {
	for _, client := range []string{"alice", "bob"} {
		id, err := s.sys.Place(ctx, ordering.NewOrder{
			ClientID: client,
			Items:    []ordering.PricedItem{{ProductID: "mug", Quantity: 1, UnitPrice: 900}},
			Timeout:  timeout,
		})
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.clients[id] = client
		s.mu.Unlock()
		s.printf("%s  %s's order placed, to be paid by %s\n", stamp(s.clock.Now()), client, stamp(s.clock.Now().Add(timeout)))
		if client != "alice" {
			continue
		}
		o, err := s.sys.Pay(ctx, id, 900)
		if err != nil {
			return err
		}
		if o.Status != ordering.StatusPaid {
			return fmt.Errorf("alice's order is %v after her payment, not paid", o.Status)
		}
		if _, err := s.sys.Complete(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// listen tells the order events the System publishes after each commit.
func (s *service) listen() ([]*bus.Subscription, error) {
	completed, err := bus.Subscribe(s.sys.Bus(), func(_ context.Context, e ordering.OrderCompleted) error {
		s.mu.Lock()
		s.completed++
		s.mu.Unlock()
		s.printf("%s  %s's order paid and completed\n", stamp(e.CompletedAt), s.client(e.OrderID))
		return nil
	})
	if err != nil {
		return nil, err
	}
	cancelled, err := bus.Subscribe(s.sys.Bus(), func(_ context.Context, e ordering.OrderCancelled) error {
		s.mu.Lock()
		s.cancelled++
		s.mu.Unlock()
		s.printf("%s  %s's order cancelled: %s\n", stamp(e.CancelledAt), s.client(e.OrderID), e.Reason)
		return nil
	})
	if err != nil {
		completed.Unsubscribe()
		return nil, err
	}
	return []*bus.Subscription{completed, cancelled}, nil
}

// minutePassed runs once the handlers are done with a minute from the
// stream: it says how many orders are pending, and ends the demo when
// none is and a run was reported.
func (s *service) minutePassed(ctx context.Context, at time.Time) error {
	stats, err := s.sys.Pending().Stats(ctx, s.clock.Now())
	if err != nil {
		return err
	}
	delivered := ""
	if m, ok := natsjs.MessageFrom(ctx); ok && m.Delivered > 1 {
		delivered = fmt.Sprintf(" (delivery %d)", m.Delivered)
	}
	s.printf("%s  minute from the stream%s: %d pending\n", stamp(at), delivered, stats.Pending)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = int(stats.Pending)
	s.endIfDone()
	return nil
}

// reportWritten counts a report, and ends the demo when it was the last
// thing it waited for.
func (s *service) reportWritten() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reported++
	s.endIfDone()
}

// endIfDone ends the demo once no order is pending and a schedule run was
// reported: the two streams are read apart, so either may come last.
func (s *service) endIfDone() {
	if s.pending == 0 && s.reported > 0 && !s.closed {
		s.closed = true
		close(s.done)
	}
}

func (s *service) client(orderID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[orderID]
}

func (s *service) printf(format string, args ...any) {
	fmt.Fprintf(s.w, format, args...)
}

// stamp is how the services show an instant: the UTC wall clock.
func stamp(t time.Time) string { return t.UTC().Format("15:04") }
