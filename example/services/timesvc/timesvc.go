package timesvc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/example/internal/demodb"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// leaseTTL is how long the minutes go without a publisher when the time
// service holding the lease dies; the stream keeps message ids twice as
// long, so that what a successor emits again is stored once.
const leaseTTL = 30 * time.Second

// Run runs the time service until ctx ends, printing each boundary it
// stored on w. args are its flags:
//
//	-nats URL       the NATS server (default nats://127.0.0.1:4222)
//	-stream NAME    the stream, created if missing (default PASSAGE_TIME)
//	-prefix SUBJ    the subjects' prefix (default services.time)
//	-runs-stream N  the stream of schedule runs (default PASSAGE_RUNS)
//	-runs-prefix S  the runs' subjects' prefix (default services.runs)
//	-report D       how often the orders-report schedule runs (default 2m)
//	-db DSN         SQLite file or postgres:// DSN of the ticker's cursor and
//	                lease, the schedules and the outbox (default: a
//	                temporary SQLite file)
//	-minute D       how long a minute lasts: 1m is real time, less
//	                simulates a clock starting at -start (default 1m)
//	-start TIME     the simulated clock's start, RFC 3339 (default: the
//	                current minute)
func Run(ctx context.Context, args []string, w io.Writer) (err error) {
	flags := flag.NewFlagSet("time", flag.ContinueOnError)
	flags.SetOutput(w)
	url := flags.String("nats", nats.DefaultURL, "the NATS server")
	stream := flags.String("stream", "PASSAGE_TIME", "the stream the boundaries are stored on, created if missing")
	prefix := flags.String("prefix", "services.time", "the subjects' prefix: <prefix>.minute, <prefix>.hour")
	runsStream := flags.String("runs-stream", "PASSAGE_RUNS", "the stream schedule runs are stored on, created if missing")
	runsPrefix := flags.String("runs-prefix", "services.runs", "the runs' subjects' prefix: <prefix>.<schedule>")
	report := flags.Duration("report", 2*time.Minute, "how often the orders-report schedule runs")
	dsn := flags.String("db", "", "SQLite file or postgres:// DSN of the cursor, lease, schedules and outbox (default: a temporary SQLite file)")
	minute := flags.Duration("minute", time.Minute, "how long a minute lasts: 1m is real time, less simulates a clock from -start")
	start := flags.String("start", "", "the simulated clock's start, RFC 3339 (default: the current minute)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *minute <= 0 || *minute > time.Minute {
		return fmt.Errorf("-minute %v: must be more than 0 and at most 1m", *minute)
	}
	simulated := *minute < time.Minute
	from := time.Now().UTC().Truncate(time.Minute)
	if *start != "" {
		if from, err = time.Parse(time.RFC3339, *start); err != nil {
			return fmt.Errorf("-start: %w", err)
		}
	}

	nc, err := nats.Connect(*url, nats.Name("passage time service"))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := natsjs.EnsureStream(ctx, js, *stream, *prefix, natsjs.WithDuplicateWindow(2*leaseTTL)); err != nil {
		return err
	}
	runs, err := natsjs.EnsureStream(ctx, js, *runsStream, *runsPrefix, natsjs.WithDuplicateWindow(2*leaseTTL))
	if err != nil {
		return err
	}
	pub, err := natsjs.NewPublisher(ctx, js, *prefix)
	if err != nil {
		return err
	}

	db, closeDB, err := demodb.Open(ctx, *dsn, "time.db")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeDB()) }()
	store, err := tick.NewSQLStore(ctx, db.DB)
	if err != nil {
		return err
	}
	var clock clockwork.Clock = clockwork.NewRealClock()
	fake := clockwork.NewFakeClockAt(from)
	if simulated {
		clock = fake
	}

	// Schedule runs go out through the outbox: recorded in the firing's
	// transaction, published by a relay after the commit.
	ob, err := outbox.Open(ctx, db.DB)
	if err != nil {
		return err
	}
	sched, err := schedule.Open(ctx, db.DB, recordRun(ob), schedule.WithClock(clock))
	if err != nil {
		return err
	}
	spec, err := schedule.Every(*report, from.Add(*report))
	if err != nil {
		return fmt.Errorf("-report: %w", err)
	}
	if _, err := sched.Sync(ctx, schedule.Definition{Name: "orders-report", Spec: spec, Command: "report"}); err != nil {
		return err
	}
	proc, err := sched.Processor()
	if err != nil {
		return err
	}
	sink := &runSink{js: js, prefix: *runsPrefix, stream: runs.CachedInfo().Config.Name, w: w}
	relay, err := outbox.NewRelay(ob, "nats", sink.Deliver, outbox.WithPoll(100*time.Millisecond))
	if err != nil {
		return err
	}
	relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(relayCtx, nil) }()
	defer func() {
		stopRelay()
		if rerr := <-relayDone; rerr != nil && !errors.Is(rerr, context.Canceled) {
			err = errors.Join(err, rerr)
		}
	}()

	ticker, err := tick.New(&announcer{pub: pub, w: w, schedules: proc, relay: relay}, store,
		tick.WithClock(clock),
		tick.WithUnits(tick.Minute, tick.Hour),
		// One emitter however many time services run: the others wait
		// for the lease.
		tick.WithLease(tick.NewHolderID(), leaseTTL))
	if err != nil {
		return err
	}
	if err := ticker.Start(ctx); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ticker.Stop(context.WithoutCancel(ctx))) }()
	fmt.Fprintf(w, "%s  schedule orders-report every %v, its runs to %s.> on stream %s\n", stamp(clock.Now()), *report, *runsPrefix, sink.stream)
	if simulated {
		fmt.Fprintf(w, "%s  publishing the passage of time to %s.> on stream %s, a minute every %v\n", stamp(from), *prefix, pub.Stream(), *minute)
		return simulate(ctx, fake, ticker, *minute)
	}
	fmt.Fprintf(w, "%s  publishing the passage of time to %s.> on stream %s\n", stamp(clock.Now()), *prefix, pub.Stream())
	<-ctx.Done()
	return nil
}

// simulate advances clock a minute every real minute until ctx ends,
// each time waiting until the ticker has stored what fell due.
func simulate(ctx context.Context, clock *clockwork.FakeClock, ticker *tick.Ticker, minute time.Duration) error {
	t := time.NewTicker(minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := tick.AdvanceAndWait(ctx, clock, time.Minute, ticker); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("pass a minute: %w", err)
		}
	}
}

// announcer publishes through pub one event at a time, says on w what the
// server stored, and fires the schedules' slots due at each stored
// minute.
type announcer struct {
	pub       *natsjs.Publisher
	schedules *todolist.Processor
	relay     *outbox.Relay

	mu sync.Mutex
	w  io.Writer
}

// Publish stores each event, stopping at the first failure as
// natsjs.Publisher does. A failure to fire the schedules is returned too,
// so that the ticker offers the minute again: the server stores it once,
// and the slots are fired then.
func (a *announcer) Publish(ctx context.Context, events ...any) error {
	for _, ev := range events {
		if err := a.pub.Publish(ctx, ev); err != nil {
			return err
		}
		e, ok := ev.(tick.Event)
		if !ok {
			continue
		}
		a.mu.Lock()
		fmt.Fprintf(a.w, "%s  %s stored\n", stamp(e.Boundary()), e.Unit())
		a.mu.Unlock()
		if e.Unit() != tick.Minute {
			continue
		}
		res, err := a.schedules.Process(ctx, e.Boundary())
		if err != nil {
			return fmt.Errorf("fire the schedules at %s: %w", stamp(e.Boundary()), err)
		}
		if res.Done > 0 {
			a.relay.Notify()
		}
	}
	return nil
}

// stamp is how the services show an instant: the UTC wall clock.
func stamp(t time.Time) string { return t.UTC().Format("15:04") }
