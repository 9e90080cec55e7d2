package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/metric"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// Delivery in "ticker run": what the ticker and the scheduler decide is
// written to the outbox in the deciding transaction, and one relay per
// sink delivers it after the commit (see the outbox package). Nothing is
// posted from inside a transaction.
const (
	// relayPoll is how often a relay looks for records when no commit of
	// this process woke it (another process's trigger, a horizon that
	// held a record back).
	relayPoll = time.Second
	// relayParallel bounds the streams a webhook's relay delivers at once.
	relayParallel = 16
	// relayBackoffMax is what the wait after a refusal doubles up to,
	// unless --webhook-backoff is longer.
	relayBackoffMax = 10 * time.Second
	// drainTimeout bounds the delivery at the end of "run --once",
	// "run --until", "schedule trigger" and "schedule backfill", and at
	// the stop of "run".
	drainTimeout = 30 * time.Second
	// deliveryLagLimit is how old a sink's oldest pending record may be
	// before /healthz reports delivery as behind.
	deliveryLagLimit = 5 * time.Minute
)

// sender is one sink: its name (the relay's checkpoints' key, stable
// across restarts) and how it sends a stored record.
type sender struct {
	name     string
	send     func(ctx context.Context, key, typ string, body []byte) error
	parallel int
	close    func() // nil, or what closes its connection (closeSenders)
}

// webhookName names a webhook's sink: its URL without password or query,
// which may hold tokens, and a hash of the whole URL, which tells apart
// URLs that differ only there.
func webhookName(hook *sink.Webhook, raw string) string {
	sum := sha256.Sum256([]byte(raw))
	shown := hook.URL()
	if len(shown) > 200 {
		shown = shown[:200] + "…"
	}
	return "webhook " + shown + " #" + hex.EncodeToString(sum[:4])
}

// delivery is the outbox of "ticker run" and its relays.
type delivery struct {
	db     *sqldb.DB
	box    *outbox.Outbox
	clock  clockwork.Clock
	logger *slog.Logger
	relays []*relay
	// horizon names a PostgreSQL transaction holding the relays back
	// (horizon.go); nil on SQLite, or set by "ticker run" alone.
	horizon *horizon
	// retention is how long the records every sink passed are kept
	// (--outbox-retention, retention.go); 0, the other commands', never
	// prunes.
	retention time.Duration
}

// retries is how a relay retries a record a sink refused: after backoff,
// doubled up to 10 s (or backoff if longer), parked after attempts
// refusals (--webhook-backoff, --webhook-attempts).
type retries struct {
	backoff  time.Duration
	attempts int
}

// deliveryOption adds to what openDelivery opens ("ticker run"'s).
type deliveryOption func(box *[]outbox.Option, relay *[]outbox.RelayOption)

// startingFrom starts every sink new to the database where from says
// (--from).
func startingFrom(from outbox.From) deliveryOption {
	return func(_ *[]outbox.Option, relay *[]outbox.RelayOption) {
		*relay = append(*relay, outbox.WithFrom(from))
	}
}

// meteredBy records the outbox's gauges (its size, its oldest record's
// age) on the command's own provider, as tick's and schedule's: each
// command (each parallel test) counts alone.
func meteredBy(mp metric.MeterProvider) deliveryOption {
	return func(box *[]outbox.Option, _ *[]outbox.RelayOption) {
		*box = append(*box, outbox.WithMeterProvider(mp))
	}
}

// relaying is what openDelivery opens relays for: one per sender, each
// retrying as retry says, on clock, logging to logger.
type relaying struct {
	senders []sender
	retry   retries
	clock   clockwork.Clock
	logger  *slog.Logger
}

// openDelivery opens the outbox of db and a relay per sink, as to says.
func openDelivery(ctx context.Context, db *sqldb.DB, to relaying, with ...deliveryOption) (*delivery, error) {
	senders, clock, logger := to.senders, to.clock, to.logger
	backoff, attempts := to.retry.backoff, to.retry.attempts
	boxOpts, relayOpts := []outbox.Option{outbox.WithClock(clock)}, []outbox.RelayOption(nil)
	for _, w := range with {
		w(&boxOpts, &relayOpts)
	}
	box, err := outbox.Open(ctx, db.DB, boxOpts...)
	if err != nil {
		return nil, fmt.Errorf("open the outbox: %w", err)
	}
	d := &delivery{db: db, box: box, clock: clock, logger: logger}
	for _, s := range senders {
		rl := &relay{name: s.name, wake: make(chan struct{}, 1)}
		send := s.send
		deliver := func(ctx context.Context, m outbox.Message) error {
			return send(requestsOf(ctx), m.Key, m.Type, m.Body)
		}
		rl.r, err = outbox.NewRelay(box, s.name, deliver, append([]outbox.RelayOption{
			outbox.WithParallel(s.parallel),
			outbox.WithPoll(relayPoll),
			outbox.WithBackoff(backoff, max(backoff, relayBackoffMax)),
			outbox.WithMaxAttempts(attempts),
			outbox.WithObserver(rl.observer(logger))}, relayOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("relay to %s: %w", s.name, err)
		}
		d.relays = append(d.relays, rl)
	}
	return d, nil
}

// notify wakes every relay: records committed. A running relay reads
// at once (Notify); one waiting for the lease looks whether this process
// holds it now (follow).
func (d *delivery) notify() {
	for _, rl := range d.relays {
		rl.r.Notify()
		select {
		case rl.wake <- struct{}{}:
		default:
		}
	}
}

// write records events (a tick.Event, a tick.TicksSkipped, a
// schedule.Run, a schedule.SlotsSkipped) in tx, for delivery after it
// commits.
func (d *delivery) write(ctx context.Context, tx sqlx.ExtContext, events ...any) error {
	records := make([]outbox.Record, 0, len(events))
	for _, e := range events {
		body, env, err := sink.Marshal(e)
		if err != nil {
			return err
		}
		records = append(records, outbox.Record{Stream: streamOf(e), Key: env.ID, Type: env.Type, Body: body})
	}
	return d.box.WriteTx(ctx, tx, records...)
}

// streamOf is what orders a record: its unit of time, or its schedule.
func streamOf(e any) string {
	switch e := e.(type) {
	case tick.Event:
		return string(e.Unit())
	case tick.TicksSkipped:
		return string(e.Unit)
	case schedule.Run:
		return "schedule/" + e.Schedule
	case schedule.SlotsSkipped:
		return "schedule/" + e.Schedule
	}
	return "other"
}

// Publish implements tick.Publisher for the ticker's own events: each is
// written to the outbox in a short transaction of its own (a boundary
// offered again is there already and not written twice), and the relays
// are woken once it committed.
func (d *delivery) Publish(ctx context.Context, events ...any) error {
	for _, e := range events {
		// One statement, committed on its own.
		if err := d.write(ctx, d.db.DB, e); err != nil {
			return fmt.Errorf("record %T in the outbox: %w", e, err)
		}
	}
	d.notify()
	return nil
}

// health is nil while delivery keeps up: no sink's oldest pending
// record was recorded more than deliveryLagLimit ago. That covers a
// receiver that refuses (its records wait behind the refusal until parked)
// and one too slow for what is recorded. It is read from the database, so
// every replica reports the truth of the one that delivers. Parked
// records do not degrade it (they stay parked until someone acts, and a
// health check that never recovers gets the process restarted for
// nothing): /metrics counts them (passage_delivery_parked) and the log
// names each.
func (d *delivery) health(ctx context.Context) error {
	now := d.clock.Now()
	for _, rl := range d.relays {
		b, err := rl.r.Backlog(ctx)
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		if b.Pending > 0 && now.Sub(b.Oldest) > deliveryLagLimit {
			return fmt.Errorf("delivery: %s is behind: %s pending, the oldest recorded %v ago at %s (limit %v), %d refused and waiting for a retry",
				rl.name, plural(b.Pending, "record", "records"), now.Sub(b.Oldest).Round(time.Second), timefmt.Format(b.Oldest), deliveryLagLimit, b.Waiting)
		}
	}
	return nil
}
