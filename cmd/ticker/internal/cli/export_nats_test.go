package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/schedule"
)

// Send is a sink's send, as a relay calls it.
type Send = func(ctx context.Context, key, typ string, body []byte) error

// NATSOutbox is "ticker run"'s outbox of db with its NATS sink alone, as
// "--nats url --nats-prefix prefix" builds it (the retry flags at their
// defaults), for tests that drive its relay pass by pass.
type NATSOutbox struct {
	d       *delivery
	senders []sender
	// Record is "ticker run"'s schedule handler: it records a run in
	// the firing's transaction.
	Record schedule.Handler
	// Name is the sink's name, its checkpoint's key.
	Name string
}

// OpenNATSOutbox connects the NATS sink (withNATS) and opens the outbox
// with its relay on clock. wrap, if not nil, wraps the sink's send.
func OpenNATSOutbox(ctx context.Context, db *sqldb.DB, url, prefix string, clock clockwork.Clock, wrap func(Send) Send) (*NATSOutbox, error) {
	f := sinkFlags{nats: natsFlags{url: url, prefix: prefix}, backoff: 200 * time.Millisecond, attempts: 360}
	senders, err := f.withNATS(ctx, nil, 30*time.Second)
	if err != nil {
		return nil, err
	}
	if wrap != nil {
		senders[0].send = wrap(senders[0].send)
	}
	d, err := openDelivery(ctx, db, relaying{senders, retries{f.backoff, f.attempts}, clock, slog.New(slog.DiscardHandler)})
	if err != nil {
		closeSenders(senders)
		return nil, err
	}
	return &NATSOutbox{d: d, senders: senders, Record: runHandler(d, nil), Name: senders[0].name}, nil
}

// Pass is one pass of the relay.
func (o *NATSOutbox) Pass(ctx context.Context) (outbox.PassResult, error) {
	return o.d.relays[0].r.Pass(ctx)
}

// Drain delivers what is committed as "ticker run --once" does, and
// returns what it delivered and left.
func (o *NATSOutbox) Drain(ctx context.Context) (delivered, left int, err error) {
	dr := o.d.drain(ctx, 10*time.Second)
	return dr.delivered, dr.left, dr.err()
}

// Backlog is what the relay has yet to publish.
func (o *NATSOutbox) Backlog(ctx context.Context) (outbox.Backlog, error) {
	return o.d.relays[0].r.Backlog(ctx)
}

// Close closes the sink's connection.
func (o *NATSOutbox) Close() { closeSenders(o.senders) }

// NATSWindow is the duplicate window "ticker run --nats" asks of its
// stream with these flags.
func NATSWindow(backoff time.Duration, attempts int, leaseTTL time.Duration) time.Duration {
	return natsWindow(backoff, attempts, leaseTTL)
}
