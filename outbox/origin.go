package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// From is where a relay starts a sink the outbox has never seen (no
// checkpoint, no refusal stored): [FromNow], the default, [FromBeginning]
// or [FromInstant]. A sink the outbox knows goes on from its checkpoint
// whatever From says. Its zero value is FromNow.
//
// From is a flag.Value (and a pflag.Value): "beginning", "now" or an
// RFC 3339 instant, as [ParseFrom] reads them.
type From struct {
	kind fromKind
	at   time.Time
}

type fromKind int

const (
	fromNow fromKind = iota
	fromBeginning
	fromInstant
)

var (
	// FromNow starts a new sink with the records written from the moment
	// NewRelay made its relay, by the outbox's clock: a sink added to a
	// database with years of records delivers none of them.
	FromNow = From{kind: fromNow}
	// FromBeginning starts a new sink with the oldest record the outbox
	// holds (retention may have pruned older ones).
	FromBeginning = From{kind: fromBeginning}
)

// FromInstant starts a new sink with the records recorded at or after t
// (Message.RecordedAt, by the writers' clock): from the first of them in
// delivery order, every record after it included. An instant later than
// every record starts where FromNow would when the relay starts.
func FromInstant(t time.Time) From {
	return From{kind: fromInstant, at: t}
}

// ParseFrom reads "beginning", "now" or an RFC 3339 instant
// ("2026-11-26T09:00:00Z", fractions of a second and offsets allowed), as
// the binary's --from takes it.
func ParseFrom(s string) (From, error) {
	switch s {
	case "beginning":
		return FromBeginning, nil
	case "now":
		return FromNow, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return From{}, fmt.Errorf("%w: from %.60q: want beginning, now or an RFC 3339 instant such as 2026-11-26T09:00:00Z", ErrInvalidArgument, s)
	}
	if err := sqldb.CheckTime(t); err != nil {
		return From{}, fmt.Errorf("%w: from %q: %w", ErrInvalidArgument, s, err)
	}
	return FromInstant(t), nil
}

// String is "beginning", "now" or the instant in RFC 3339.
func (f From) String() string {
	switch f.kind {
	case fromBeginning:
		return "beginning"
	case fromInstant:
		return f.at.Format(time.RFC3339Nano)
	}
	return "now"
}

// Set sets f from s as ParseFrom reads it, for flag.Value.
func (f *From) Set(s string) error {
	v, err := ParseFrom(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// Type names the values f takes, for pflag.Value's help.
func (f *From) Type() string { return "beginning|now|INSTANT" }

// WithFrom sets where the relay starts its sink when the outbox has never
// seen it (default FromNow); a known sink resumes from its checkpoint.
func WithFrom(f From) RelayOption {
	return func(r *Relay) error {
		if f.kind == fromInstant {
			if err := sqldb.CheckTime(f.at); err != nil {
				return fmt.Errorf("%w: WithFrom(%s): %w", ErrInvalidOption, f, err)
			}
		}
		r.from = f
		return nil
	}
}

// Origin is where a relay delivers from ([Relay.Origin]).
type Origin struct {
	// Resumed is true when the outbox knew the sink (a checkpoint or a
	// refusal stored): the relay goes on where the sink's last relay
	// stopped, and From played no part.
	Resumed bool
	// From is where the relay was told to start a new sink (WithFrom),
	// At the instant it stood for: when NewRelay made the relay for
	// FromNow, the instant for FromInstant, zero for FromBeginning.
	From From
	At   time.Time
	// After is the Position of the last record the sink is not offered
	// (its checkpoint), 0 when it starts with the first record. On
	// PostgreSQL a record of a later transaction may have a lower
	// Position and still be offered.
	After int64
	// Skipped counts the records held, written before where a new sink
	// started, that it is never offered; 0 when Resumed.
	Skipped int
}

// String says where the relay starts, as a log line would.
func (o Origin) String() string {
	switch {
	case o.Resumed:
		return fmt.Sprintf("resumes from its checkpoint (after record %d)", o.After)
	case o.From.kind == fromBeginning:
		return fmt.Sprintf("starts from the beginning (after record %d)", o.After)
	}
	return fmt.Sprintf("starts from %s (%s): %d earlier records not delivered (after record %d)",
		o.From, o.At.Format(time.RFC3339Nano), o.Skipped, o.After)
}

// Origin returns where the relay delivers from, deciding it the first
// time it is asked (Pass and Run ask first): a sink the outbox
// knows resumes from its checkpoint; a new one is given a checkpoint
// where WithFrom says, stored before anything is delivered, so that its
// next relays resume there and pruning counts it. The Observer's Started
// is told once.
//
// The place is decided within what PostgreSQL's horizon lets a reader
// see (see the package documentation): it is never past a record that a
// transaction still running could commit. So a new sink may also be
// offered records written before it started by transactions that were
// open or committed late then; never fewer than From says.
func (r *Relay) Origin(ctx context.Context) (Origin, error) {
	o, err := r.ensureOrigin(ctx)
	if err != nil {
		return o, fmt.Errorf("outbox: relay %q: %w", r.sink, err)
	}
	return o, nil
}

// ensureOrigin is Origin, its error not naming the relay.
func (r *Relay) ensureOrigin(ctx context.Context) (Origin, error) {
	if o := r.origin.Load(); o != nil {
		return *o, nil
	}
	r.originMu.Lock()
	defer r.originMu.Unlock()
	if o := r.origin.Load(); o != nil {
		return *o, nil
	}
	o, err := r.decideOrigin(ctx)
	if err != nil {
		return Origin{}, fmt.Errorf("decide where it starts: %w", err)
	}
	r.origin.Store(&o)
	if f := r.observer.Started; f != nil {
		f(o)
	}
	return o, nil
}

// readFrom is where the sink's records are read after: its checkpoint
// once Origin decided or the outbox knows the sink, else where Origin
// would start it. It only reads.
func (r *Relay) readFrom(ctx context.Context) (position, error) {
	d := r.outbox.d
	if r.origin.Load() == nil {
		known, err := d.known(ctx, r.sink)
		if err != nil {
			return position{}, err
		}
		if !known {
			switch r.from.kind {
			case fromBeginning:
				return position{}, nil
			case fromInstant:
				return d.startAt(ctx, sqldb.EncodeTime(r.from.at))
			}
			return d.startAt(ctx, sqldb.EncodeTime(r.made))
		}
	}
	return d.checkpoint(ctx, r.sink)
}

func (r *Relay) decideOrigin(ctx context.Context) (Origin, error) {
	d := r.outbox.d
	o := Origin{From: r.from}
	for {
		known, err := d.known(ctx, r.sink)
		if err != nil {
			return o, err
		}
		if known {
			from, err := d.checkpoint(ctx, r.sink)
			if err != nil {
				return o, err
			}
			return Origin{Resumed: true, After: from.ID}, nil
		}
		var at position
		switch r.from.kind {
		case fromNow:
			o.At = r.made
		case fromInstant:
			o.At = r.from.at
		}
		if r.from.kind != fromBeginning {
			if at, err = d.startAt(ctx, sqldb.EncodeTime(o.At)); err != nil {
				return o, err
			}
		}
		claimed, err := d.claim(ctx, r.sink, at)
		if err != nil {
			return o, err
		}
		if !claimed {
			continue // another relay of the sink got there first: resume
		}
		o.After = at.ID
		if at != (position{}) {
			if o.Skipped, err = d.countUpTo(ctx, at); err != nil {
				return o, err
			}
		}
		return o, nil
	}
}
