package eventstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// StreamAppend is one stream's part of [Store.AppendMany]: the arguments of
// one [Store.Append].
type StreamAppend struct {
	// Stream is the stream to append to; it must not be empty.
	Stream string
	// Expected is the condition on the stream's version, as for Append.
	Expected ExpectedVersion
	// Events are appended in order; with none, the entry only checks
	// Expected and reports the stream's version.
	Events []any
}

// AppendOutcome is what became of one [StreamAppend] of a batch: either it
// was appended (Conflict is nil and Result is what [Store.Append] would
// have returned) or its expected version did not hold (Conflict says
// where the stream is, and nothing of the entry was stored).
type AppendOutcome struct {
	// Result is the entry's append; zero when Conflict is set.
	Result AppendResult
	// Conflict is the entry's version conflict, or nil.
	Conflict *VersionConflictError
}

// Err returns Conflict as an error, or nil (not a typed nil) when the
// entry was appended, for callers that handle outcomes as errors.
func (o AppendOutcome) Err() error {
	if o.Conflict == nil {
		return nil
	}
	return o.Conflict
}

// AppendMany appends to many streams in one transaction, each entry of
// batch with its own expected version, as [Store.Append] would one by
// one; it returns one outcome per entry, in batch order. An entry whose
// expected version does not hold gets a [*VersionConflictError] in its
// outcome and stores nothing, and the others are appended all the same:
// a conflict on one stream fails none of the others. Every entry that
// does not conflict commits together, in one transaction that also runs
// the [WithInTransaction] hooks, once per appended entry with that
// entry's events, in batch order. After commit the events are published
// to the [WithPublisher] publisher, one entry at a time in batch order.
//
// The error is for what fails the batch as a whole, and then nothing is
// stored: invalid input (an empty stream name, an invalid expected
// version, an event of an unregistered type — the error names the entry's
// index and stream), a storage failure, a hook's error or panic. When the
// events were committed but publishing failed, AppendMany returns the
// outcomes together with an error matching [ErrPublish] (one for every
// entry that failed to publish; the others were published): do not append
// again.
//
// A stream may appear more than once in a batch: its entries apply in
// order, exactly as that many Appends would, each expected version
// checked against the stream as the entries before it left it.
//
// Appenders take their turns as Append's do (a stream's appenders take
// turns, in one process or many); a batch takes the turns of all its
// streams that have events for the length of its transaction, in an order
// every batch follows, so concurrent batches cannot deadlock each other.
// The versions are then read and checked in one statement and the events
// inserted in one statement per few thousand rows, which is what makes a
// batch much faster than an Append per stream (see BenchmarkAppendMany).
func (s *Store) AppendMany(ctx context.Context, batch []StreamAppend) ([]AppendOutcome, error) {
	plan, err := s.planMany(batch)
	if err != nil {
		return nil, err
	}
	if len(batch) == 0 {
		return []AppendOutcome{}, nil
	}
	var outcomes []AppendOutcome
	for attempt := 1; ; attempt++ {
		outcomes, err = s.appendManyInTx(ctx, plan)
		// A writer that does not take its turn took a version the batch
		// was about to write (see raceRetries). The transaction is gone
		// on PostgreSQL, so the whole batch starts over and every entry
		// is checked again against where its stream now is.
		if errors.Is(err, errManyRaced) && attempt <= raceRetries && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	var published []error
	for _, o := range outcomes {
		if o.Conflict == nil {
			if err := s.Publish(ctx, o.Result.Recorded); err != nil {
				published = append(published, err)
			}
		}
	}
	return outcomes, errors.Join(published...)
}

func (s *Store) appendManyInTx(ctx context.Context, plan manyPlan) ([]AppendOutcome, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("eventstore: append to %d streams: begin: %w", len(plan.entries), err)
	}
	defer func() { _ = tx.Rollback() }()
	outcomes, err := s.appendMany(ctx, tx, plan)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("eventstore: append to %d streams: commit: %w", len(plan.entries), err)
	}
	return outcomes, nil
}

// AppendManyTx is [Store.AppendMany] inside the caller's transaction, as
// [Store.AppendTx] is Append: tx must be on the store's database, the
// [WithInTransaction] hooks run in it, and nothing is published — after a
// successful commit, publish each appended outcome's Result.Recorded with
// [Store.Publish]. The batch's streams take their turns until tx ends.
//
// A version taken meanwhile by a writer that does not take its turn (see
// [Store.AppendTx]) fails the call with an error matching
// [ErrWrongExpectedVersion]; on PostgreSQL it has aborted tx. After any
// error, roll tx back.
func (s *Store) AppendManyTx(ctx context.Context, tx *sqlx.Tx, batch []StreamAppend) ([]AppendOutcome, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: append to %d streams: transaction must not be nil", ErrInvalidArgument, len(batch))
	}
	if err := s.sameDatabase(tx); err != nil {
		return nil, fmt.Errorf("%w: append to %d streams: %w", ErrInvalidArgument, len(batch), err)
	}
	plan, err := s.planMany(batch)
	if err != nil {
		return nil, err
	}
	if len(batch) == 0 {
		return []AppendOutcome{}, nil
	}
	outcomes, err := s.appendMany(ctx, tx, plan)
	if errors.Is(err, errManyRaced) {
		return nil, fmt.Errorf("%w: %w", ErrWrongExpectedVersion, err)
	}
	return outcomes, err
}

// errManyRaced is what appendMany returns when the (stream, version)
// constraint refused one of its rows.
var errManyRaced = errors.New("eventstore: a version of the batch was taken by a writer that does not take its turn")

// manyPlan is a batch checked and encoded before the database is touched.
type manyPlan struct {
	entries []StreamAppend
	encoded [][]encoded
	// streams are the batch's distinct streams, and locked those of them
	// with events to append, both in first-appearance order.
	streams, locked []string
}

func (s *Store) planMany(batch []StreamAppend) (manyPlan, error) {
	plan := manyPlan{entries: batch, encoded: make([][]encoded, len(batch))}
	seen := make(map[string]bool, len(batch))
	for i, entry := range batch {
		if entry.Stream == "" {
			return manyPlan{}, fmt.Errorf("%w: append to %d streams: entry %d: stream name must not be empty", ErrInvalidArgument, len(batch), i)
		}
		if !entry.Expected.valid() {
			return manyPlan{}, fmt.Errorf("%w: append to %d streams: entry %d (stream %q): %s", ErrInvalidArgument, len(batch), i, entry.Stream, entry.Expected)
		}
		plan.encoded[i] = make([]encoded, len(entry.Events))
		for j, e := range entry.Events {
			name, data, value, err := s.registry.encode(e)
			if err != nil {
				return manyPlan{}, fmt.Errorf("eventstore: append to %d streams: entry %d (stream %q): event %d: %w", len(batch), i, entry.Stream, j, err)
			}
			plan.encoded[i][j] = encoded{name, data, value}
		}
		locked, known := seen[entry.Stream]
		if !known {
			plan.streams = append(plan.streams, entry.Stream)
		}
		if len(entry.Events) > 0 && !locked {
			plan.locked = append(plan.locked, entry.Stream)
		}
		seen[entry.Stream] = locked || len(entry.Events) > 0
	}
	return plan, nil
}

// manyRow is an event of a batch to insert, and where its Recorded goes.
type manyRow struct {
	entry, index int
}

func (s *Store) appendMany(ctx context.Context, tx *sqlx.Tx, plan manyPlan) ([]AppendOutcome, error) {
	n := len(plan.entries)
	// Take the turns first, then read: the versions read are then the
	// ones the events go after.
	if len(plan.locked) > 0 {
		if err := s.driver.takeTurns(ctx, tx, plan.locked); err != nil {
			return nil, fmt.Errorf("eventstore: append to %d streams: wait for the streams' turns: %w", n, err)
		}
	}
	current, err := s.driver.versions(ctx, tx, plan.streams)
	if err != nil {
		return nil, fmt.Errorf("eventstore: append to %d streams: read versions: %w", n, err)
	}
	return s.appendAt(ctx, tx, plan, current)
}

// appendAt is appendMany once tx holds the turns of plan's streams and
// current holds their versions, which it moves on past the events it
// appends.
func (s *Store) appendAt(ctx context.Context, tx *sqlx.Tx, plan manyPlan, current map[string]int64) ([]AppendOutcome, error) {
	n := len(plan.entries)
	at := sqldb.EncodeTime(s.clock.Now())
	recordedAt := sqldb.DecodeTime(at)
	outcomes := make([]AppendOutcome, n)
	var rows []manyRow
	for i, entry := range plan.entries {
		version := current[entry.Stream]
		if !entry.Expected.allows(version) {
			outcomes[i].Conflict = &VersionConflictError{Stream: entry.Stream, Expected: entry.Expected, Actual: version}
			continue
		}
		if len(entry.Events) == 0 {
			outcomes[i].Result.Version = version
			continue
		}
		recorded := make([]Recorded, len(entry.Events))
		for j, e := range plan.encoded[i] {
			recorded[j] = Recorded{Stream: entry.Stream, Version: version + int64(j) + 1, Type: e.name, Event: e.value, RecordedAt: recordedAt}
			rows = append(rows, manyRow{i, j})
		}
		current[entry.Stream] = version + int64(len(recorded))
		outcomes[i].Result = AppendResult{Version: current[entry.Stream], Recorded: recorded}
	}

	if err := s.insertMany(ctx, tx, plan, outcomes, rows, at); err != nil {
		return nil, err
	}
	for i, o := range outcomes {
		if o.Conflict != nil || len(o.Result.Recorded) == 0 {
			continue
		}
		for h, hook := range s.hooks {
			if err := safely(func() error { return hook(ctx, tx, o.Result.Recorded) }); err != nil {
				return nil, fmt.Errorf("eventstore: append to %d streams: entry %d (stream %q): in-transaction hook %d: %w", n, i, plan.entries[i].Stream, h, err)
			}
		}
	}
	return outcomes, nil
}

// insertMany inserts the events of rows, a statement per chunk, and fills
// in the positions the database gave them.
func (s *Store) insertMany(ctx context.Context, tx *sqlx.Tx, plan manyPlan, outcomes []AppendOutcome, rows []manyRow, at int64) error {
	type key struct {
		stream  string
		version int64
	}
	size := s.driver.insertChunk()
	for start := 0; start < len(rows); start += size {
		chunk := rows[start:min(start+size, len(rows))]
		// RETURNING promises no order, so positions are matched by
		// (stream, version).
		place := make(map[key]*Recorded, len(chunk))
		insert := make([]eventRow, len(chunk))
		for i, r := range chunk {
			rec := &outcomes[r.entry].Result.Recorded[r.index]
			insert[i] = eventRow{rec.Stream, rec.Version, rec.Type, string(plan.encoded[r.entry][r.index].data)}
			place[key{rec.Stream, rec.Version}] = rec
		}
		result, err := s.driver.insertMany(ctx, tx, insert, at)
		if err != nil {
			return s.insertManyFailed(len(plan.entries), err)
		}
		for result.Next() {
			var k key
			var position int64
			if err := result.Scan(&k.stream, &k.version, &position); err != nil {
				_ = result.Close()
				return s.insertManyFailed(len(plan.entries), err)
			}
			if rec := place[k]; rec != nil {
				rec.Position = position
			}
		}
		if err := result.Err(); err != nil {
			return s.insertManyFailed(len(plan.entries), err)
		}
		_ = result.Close()
	}
	return nil
}

func (s *Store) insertManyFailed(n int, err error) error {
	if s.driver.isUniqueViolation(err) {
		return fmt.Errorf("%w: %w", errManyRaced, err)
	}
	return fmt.Errorf("eventstore: append to %d streams: insert: %w", n, err)
}
