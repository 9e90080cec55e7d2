package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Limits on a record's text, which both engines index.
const (
	// MaxKeyLength is the longest key, in bytes.
	MaxKeyLength = 1000
	// MaxStreamLength is the longest stream name, in bytes.
	MaxStreamLength = 500
)

// Record is one thing a transaction decided, to be delivered after it
// commits.
type Record struct {
	// Stream orders the records: a sink receives one stream's records in
	// the order they committed. A schedule's name, a unit of time.
	Stream string
	// Key is the record's stable identity, unique in the outbox and sent
	// with every delivery of it so that a receiver can de-duplicate: a
	// run's slot id, a boundary's unit and instant.
	Key string
	// Type names what the record is, for the sink (a webhook's event
	// header, say).
	Type string
	// Body is what the sink delivers, as the writer encoded it.
	Body []byte
}

// Outbox is the table of records waiting for, or past, delivery. It is
// safe for concurrent use, and several processes may write to it at once.
type Outbox struct {
	d     driver
	clock clockwork.Clock

	pruneBatch int           // WithPruneBatch
	pruneEvery time.Duration // WithPruneEvery
	meters     metric.MeterProvider
	ins        instruments
}

// Option configures an [Outbox].
type Option func(*Outbox) error

// WithClock sets the clock that stamps records (RecordedAt) and times
// the relays' retries; the default is the real clock.
func WithClock(c clockwork.Clock) Option {
	return func(o *Outbox) error {
		if c == nil {
			return fmt.Errorf("%w: WithClock: nil clock", ErrInvalidOption)
		}
		o.clock = c
		return nil
	}
}

// Open returns the outbox of db (SQLite or PostgreSQL, opened with the
// driver names "sqlite3" or "pgx"), creating its tables on first use.
func Open(ctx context.Context, db *sqlx.DB, opts ...Option) (*Outbox, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil db", ErrInvalidArgument)
	}
	o := &Outbox{
		d: newDriver(db), clock: clockwork.NewRealClock(),
		pruneBatch: defaultPruneBatch, pruneEvery: defaultPruneEvery,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if err := sqldb.Migrate(ctx, db, component, migrations); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	if o.meters == nil {
		o.meters = otel.GetMeterProvider()
	}
	o.ins = newInstruments(o.meters, o)
	return o, nil
}

// WriteTx records records in tx, the transaction that decided them, so
// that they are delivered if and only if it commits. A record whose key
// is there already is left as it was: a decision retried after a crash,
// or by two replicas, records once. ext must belong to the outbox's
// database.
func (o *Outbox) WriteTx(ctx context.Context, ext sqlx.ExtContext, records ...Record) error {
	if ext == nil {
		return fmt.Errorf("%w: write %d records: nil transaction", ErrInvalidArgument, len(records))
	}
	at := sqldb.EncodeTime(o.clock.Now())
	for _, r := range records {
		if err := r.check(); err != nil {
			return err
		}
		if err := o.d.write(ctx, ext, r, at); err != nil {
			return fmt.Errorf("outbox: write %q: %w", r.Key, err)
		}
	}
	return nil
}

func (r Record) check() error {
	switch {
	case r.Key == "" || len(r.Key) > MaxKeyLength:
		return fmt.Errorf("%w: record key %.40q must be 1 to %d bytes", ErrInvalidArgument, r.Key, MaxKeyLength)
	case r.Stream == "" || len(r.Stream) > MaxStreamLength:
		return fmt.Errorf("%w: record %q: stream %.40q must be 1 to %d bytes", ErrInvalidArgument, r.Key, r.Stream, MaxStreamLength)
	}
	return nil
}

// Message is a record as a relay delivers it.
type Message struct {
	Record
	// Position orders the outbox's records; it is unique.
	Position int64
	// RecordedAt is when the deciding transaction wrote the record.
	RecordedAt time.Time
	// Attempt counts this sink's deliveries of the record, from 1.
	Attempt int
}

// Parked is a record a sink refused too often: its stream went on
// without it, and it stays listed, never dropped.
type Parked struct {
	Message
	// Sink is the sink that refused it.
	Sink string
	// LastError is the sink's last refusal.
	LastError string
}

// Parked returns the records sink parked, oldest first ("" for every
// sink's).
func (o *Outbox) Parked(ctx context.Context, sink string) ([]Parked, error) {
	rows, err := o.d.parked(ctx, sink)
	if err != nil {
		return nil, fmt.Errorf("outbox: list the records %q parked: %w", sink, err)
	}
	out := make([]Parked, len(rows))
	for i, r := range rows {
		out[i] = Parked{Message: r.message(r.Attempts), Sink: r.Sink, LastError: r.LastError}
	}
	return out, nil
}

func (r recordRow) message(attempt int) Message {
	return Message{
		Record:   Record{Stream: r.Stream, Key: r.Key, Type: r.Type, Body: r.Body},
		Position: r.Position, RecordedAt: sqldb.DecodeTime(r.RecordedAt), Attempt: attempt,
	}
}
