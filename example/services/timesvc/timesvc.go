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

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
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
//	-prefix SUBJ    the subjects' prefix (default passage.time)
//	-db DSN         SQLite file or postgres:// DSN of the ticker's cursor and
//	                lease (default: in memory, lost at exit)
//	-minute D       how long a minute lasts: 1m is real time, less
//	                simulates a clock starting at -start (default 1m)
//	-start TIME     the simulated clock's start, RFC 3339 (default: the
//	                current minute)
func Run(ctx context.Context, args []string, w io.Writer) (err error) {
	flags := flag.NewFlagSet("time", flag.ContinueOnError)
	flags.SetOutput(w)
	url := flags.String("nats", nats.DefaultURL, "the NATS server")
	stream := flags.String("stream", "PASSAGE_TIME", "the stream the boundaries are stored on, created if missing")
	prefix := flags.String("prefix", "passage.time", "the subjects' prefix: <prefix>.minute, <prefix>.hour")
	dsn := flags.String("db", "", "SQLite file or postgres:// DSN of the ticker's cursor and lease (default: in memory)")
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
	pub, err := natsjs.NewPublisher(ctx, js, *prefix)
	if err != nil {
		return err
	}

	var store tick.CursorStore = tick.NewMemoryStore()
	if *dsn != "" {
		db, err := sqldb.Open(ctx, *dsn)
		if err != nil {
			return fmt.Errorf("open the database: %w", err)
		}
		defer func() { err = errors.Join(err, db.Close()) }()
		if store, err = tick.NewSQLStore(ctx, db.DB); err != nil {
			return err
		}
	}
	var clock clockwork.Clock = clockwork.NewRealClock()
	fake := clockwork.NewFakeClockAt(from)
	if simulated {
		clock = fake
	}
	ticker, err := tick.New(&announcer{pub: pub, w: w}, store,
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

// announcer publishes through pub one event at a time, and says on w what
// the server stored.
type announcer struct {
	pub *natsjs.Publisher
	mu  sync.Mutex
	w   io.Writer
}

// Publish stores each event, stopping at the first failure as
// natsjs.Publisher does.
func (a *announcer) Publish(ctx context.Context, events ...any) error {
	for _, ev := range events {
		if err := a.pub.Publish(ctx, ev); err != nil {
			return err
		}
		if e, ok := ev.(tick.Event); ok {
			a.mu.Lock()
			fmt.Fprintf(a.w, "%s  %s stored\n", stamp(e.Boundary()), e.Unit())
			a.mu.Unlock()
		}
	}
	return nil
}

// stamp is how the services show an instant: the UTC wall clock.
func stamp(t time.Time) string { return t.UTC().Format("15:04") }
