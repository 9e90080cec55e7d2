package eventstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// TryTurnsTx takes in tx, without waiting, the turns of those of streams
// that no other transaction holds, as an append in tx would (see
// [Store.AppendTx]), and returns the others: the streams another
// transaction is appending to at this moment. tx keeps the turns it took
// until it ends, so its appends to those streams wait for no one, and
// the versions it reads of them from then on stay the latest until it
// appends. On SQLite every turn is tx's already (its immediate
// transaction holds the database's only write lock): busy is always
// empty.
//
// It is for a transaction that must not wait for a turn because it holds
// rows another appender may need before it lets its turn go — the items
// of a to-do list batch locked FOR UPDATE, which an appender's
// [WithInTransaction] projection removes. Waiting there is a deadlock:
// PostgreSQL ends it after its deadlock_timeout by failing one of the
// two. Append only to the streams taken, and leave the busy ones for
// later.
func (s *Store) TryTurnsTx(ctx context.Context, tx *sqlx.Tx, streams []string) (busy []string, err error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: take the turns of %d streams: transaction must not be nil", ErrInvalidArgument, len(streams))
	}
	if err := s.sameDatabase(tx); err != nil {
		return nil, fmt.Errorf("%w: take the turns of %d streams: %w", ErrInvalidArgument, len(streams), err)
	}
	for i, name := range streams {
		if name == "" {
			return nil, fmt.Errorf("%w: take the turns of %d streams: stream %d has an empty name", ErrInvalidArgument, len(streams), i)
		}
	}
	if len(streams) == 0 {
		return nil, nil
	}
	if busy, err = s.driver.tryTurns(ctx, tx, streams); err != nil {
		return nil, fmt.Errorf("eventstore: take the turns of %d streams: %w", len(streams), err)
	}
	return busy, nil
}

// Turns is a transaction's hold on the turns of some streams, taken with
// [Store.TakeTurnsTx], and those streams' events as they stood once it
// held them. Until the transaction ends no appender that takes its turn
// can move the streams, so the versions loaded stay their latest, and
// [Turns.AppendMany] checks expected versions against them without
// reading them again.
type Turns struct {
	store    *Store
	tx       *sqlx.Tx
	events   map[string][]Recorded
	versions map[string]int64 // of every held stream, moved on by AppendMany
	busy     []string
}

// TakeTurnsTx takes in tx, without waiting, the turns of those of streams
// that no other transaction holds, as [Store.TryTurnsTx] does, then loads
// the streams it took, as [Store.LoadManyTx] does: the turns first, so
// that what is loaded is where the streams stand until tx appends.
//
// It is TryTurnsTx, LoadManyTx and AppendManyTx for a transaction that
// decides a batch of aggregates: [Turns.AppendMany] neither takes the
// turns again nor reads the versions again, two statements fewer a batch
// (one on SQLite, whose immediate transaction holds every turn already),
// which is most of what a small batch costs beyond its inserts. Streams
// another transaction is appending to are left out: see [Turns.Busy].
func (s *Store) TakeTurnsTx(ctx context.Context, tx *sqlx.Tx, streams []string) (*Turns, error) {
	busy, err := s.TryTurnsTx(ctx, tx, streams)
	if err != nil {
		return nil, err
	}
	held := streams
	if len(busy) > 0 {
		skip := make(map[string]bool, len(busy))
		for _, b := range busy {
			skip[b] = true
		}
		held = make([]string, 0, len(streams)-len(busy))
		for _, name := range streams {
			if !skip[name] {
				held = append(held, name)
			}
		}
	}
	events, err := s.loadMany(ctx, tx, held)
	if err != nil {
		return nil, err
	}
	versions := make(map[string]int64, len(held))
	for _, name := range held {
		if recorded := events[name]; len(recorded) > 0 {
			versions[name] = recorded[len(recorded)-1].Version
		} else {
			versions[name] = 0
		}
	}
	return &Turns{store: s, tx: tx, events: events, versions: versions, busy: busy}, nil
}

// Busy returns the streams whose turns another transaction held: they
// were not loaded, and Turns cannot append to them. Try them again in a
// later transaction, or with another TakeTurnsTx once that one may have
// ended.
func (t *Turns) Busy() []string { return t.busy }

// Events returns the events of a held stream as they were when its turn
// was taken, whole and in order; nil for a stream without events, or
// one not held.
func (t *Turns) Events(stream string) []Recorded { return t.events[stream] }

// AppendMany is [Store.AppendManyTx] in the transaction holding the
// turns, to streams it holds: each entry's expected version is checked
// against the version loaded (moved on by the appends made through t),
// and a conflict fails only its entry. Appending to a stream t does not
// hold — a busy one, or one not asked for — fails the whole call with
// [ErrInvalidArgument], and nothing is stored.
//
// A version taken meanwhile by a writer that does not take its turn fails
// the call with an error matching [ErrWrongExpectedVersion]; on
// PostgreSQL it has aborted the transaction. After any error, roll the
// transaction back.
func (t *Turns) AppendMany(ctx context.Context, batch []StreamAppend) ([]AppendOutcome, error) {
	plan, err := t.store.planMany(batch)
	if err != nil {
		return nil, err
	}
	if len(batch) == 0 {
		return []AppendOutcome{}, nil
	}
	for _, name := range plan.streams {
		if _, held := t.versions[name]; !held {
			return nil, fmt.Errorf("%w: append to %d streams: stream %q is not held by these turns (another transaction held it, or it was not asked for)", ErrInvalidArgument, len(batch), name)
		}
	}
	current := make(map[string]int64, len(plan.streams))
	for _, name := range plan.streams {
		current[name] = t.versions[name]
	}
	outcomes, err := t.store.appendAt(ctx, t.tx, plan, current)
	if errors.Is(err, errManyRaced) {
		return nil, fmt.Errorf("%w: %w", ErrWrongExpectedVersion, err)
	}
	if err != nil {
		return nil, err
	}
	for name, v := range current {
		t.versions[name] = v
	}
	return outcomes, nil
}
