package outbox

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Deliver hands one message to a sink. It returns nil once the sink has
// it; an error is a refusal, retried with backoff. It may be called from
// several goroutines at once, for messages of different streams; the
// messages of one stream come one at a time, in order. It should honour
// ctx: a relay that stops cancels it.
type Deliver func(ctx context.Context, m Message) error

// Observer is told what a relay does, for logs and metrics. Its
// functions may be nil; they are called from the delivering goroutines.
type Observer struct {
	// Delivered is called once a sink took m, lateness after the record
	// was written.
	Delivered func(m Message, lateness time.Duration)
	// Refused is called when the sink refused m and it is retried at
	// next (always after now).
	Refused func(m Message, err error, next time.Time)
	// Parked is called when the sink refused m for the last time.
	Parked func(m Message, err error)
}

// Stats are a relay's counts since it was made.
type Stats struct {
	// Delivered counts deliveries the sink took, Refused those it did
	// not (each retried or parked), Parked the records given up.
	Delivered, Refused, Parked int64
	// Passes counts passes over the outbox, Failed those that failed
	// (the database, not a sink).
	Passes, Failed int64
}

// Relay delivers one sink's records: see the package documentation. Run
// delivers until its context ends; Pass delivers what is committed now,
// once, for tests and run-once commands.
type Relay struct {
	outbox  *Outbox
	sink    string
	deliver Deliver

	page        int
	parallel    int
	poll        time.Duration
	backoffBase time.Duration
	backoffMax  time.Duration
	maxAttempts int
	observer    Observer

	wake  chan struct{}
	stats struct{ delivered, refused, parked, passes, failed atomic.Int64 }
}

// RelayOption configures a [Relay]. An unusable value makes NewRelay
// fail with [ErrInvalidOption].
type RelayOption func(*Relay) error

// WithParallel sets how many streams are delivered at once (default 16):
// a slow request delays its own stream, not the others.
func WithParallel(n int) RelayOption {
	return func(r *Relay) error {
		if n < 1 {
			return fmt.Errorf("%w: WithParallel(%d): at least 1", ErrInvalidOption, n)
		}
		r.parallel = n
		return nil
	}
}

// WithPage sets how many records one read takes (default 1,000).
func WithPage(n int) RelayOption {
	return func(r *Relay) error {
		if n < 1 {
			return fmt.Errorf("%w: WithPage(%d): at least 1", ErrInvalidOption, n)
		}
		r.page = n
		return nil
	}
}

// WithPoll sets how long Run waits for new records when no Notify comes
// (default one second).
func WithPoll(d time.Duration) RelayOption {
	return func(r *Relay) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithPoll(%v): must be positive", ErrInvalidOption, d)
		}
		r.poll = d
		return nil
	}
}

// WithBackoff sets the wait after a refusal: base after the first,
// doubling up to max (defaults one second and one minute).
func WithBackoff(base, max time.Duration) RelayOption {
	return func(r *Relay) error {
		if base <= 0 || max < base {
			return fmt.Errorf("%w: WithBackoff(%v, %v): base must be positive and max at least base", ErrInvalidOption, base, max)
		}
		r.backoffBase, r.backoffMax = base, max
		return nil
	}
}

// WithMaxAttempts sets how many refusals park a record (default 100; at
// the default backoff, about an hour and a half of refusals).
func WithMaxAttempts(n int) RelayOption {
	return func(r *Relay) error {
		if n < 1 {
			return fmt.Errorf("%w: WithMaxAttempts(%d): at least 1", ErrInvalidOption, n)
		}
		r.maxAttempts = n
		return nil
	}
}

// WithObserver sets the relay's observer.
func WithObserver(o Observer) RelayOption {
	return func(r *Relay) error {
		r.observer = o
		return nil
	}
}

// NewRelay returns the relay of sink (a name, its checkpoints' key) over
// o, delivering with deliver. One relay per sink at a time is the
// intent; two deliver some records twice and skip none.
func NewRelay(o *Outbox, sink string, deliver Deliver, opts ...RelayOption) (*Relay, error) {
	switch {
	case o == nil:
		return nil, fmt.Errorf("%w: NewRelay: nil outbox", ErrInvalidArgument)
	case sink == "" || len(sink) > MaxStreamLength:
		return nil, fmt.Errorf("%w: NewRelay: sink name %.40q must be 1 to %d bytes", ErrInvalidArgument, sink, MaxStreamLength)
	case deliver == nil:
		return nil, fmt.Errorf("%w: NewRelay %q: nil deliver", ErrInvalidArgument, sink)
	}
	r := &Relay{
		outbox: o, sink: sink, deliver: deliver,
		page: 1000, parallel: 16, poll: time.Second,
		backoffBase: time.Second, backoffMax: time.Minute, maxAttempts: 100,
		wake: make(chan struct{}, 1),
	}
	for _, opt := range opts {
		if err := opt(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Stats returns the relay's counts.
func (r *Relay) Stats() Stats {
	return Stats{
		Delivered: r.stats.delivered.Load(), Refused: r.stats.refused.Load(), Parked: r.stats.parked.Load(),
		Passes: r.stats.passes.Load(), Failed: r.stats.failed.Load(),
	}
}

// Backlog is what a sink has yet to take (Relay.Backlog).
type Backlog struct {
	// Pending counts the committed records the sink has neither taken
	// nor parked; Waiting those of them it refused, waiting for a retry.
	// The others wait behind a refusal of their stream, for a pass, or
	// (PostgreSQL) for an older transaction still running to end.
	Pending, Waiting int
	// Oldest is when the oldest pending record was written; zero when
	// none is pending.
	Oldest time.Time
}

// Backlog counts what the sink has yet to take, from the database: what
// a run-once command has left, a health check's delivery lag. It reads
// every pending record's row, so it costs what a pass would read.
func (r *Relay) Backlog(ctx context.Context) (Backlog, error) {
	var b Backlog
	o := r.outbox
	from, err := o.d.checkpoint(ctx, r.sink)
	if err != nil {
		return b, fmt.Errorf("outbox: relay %q: read the checkpoint: %w", r.sink, err)
	}
	var oldest int64
	if b.Pending, oldest, err = o.d.backlog(ctx, r.sink, from); err != nil {
		return b, fmt.Errorf("outbox: relay %q: count the backlog: %w", r.sink, err)
	}
	if b.Pending > 0 {
		b.Oldest = sqldb.DecodeTime(oldest)
	}
	if b.Waiting, err = o.d.waiting(ctx, r.sink); err != nil {
		return b, fmt.Errorf("outbox: relay %q: count the refusals: %w", r.sink, err)
	}
	return b, nil
}

// Notify tells Run that records committed: it passes at once instead of
// at its next poll. It never blocks.
func (r *Relay) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, passing whenever Notify is called, at
// every poll, and at once again while passes find full pages. A pass
// that fails (the database) is retried at the next poll; onError, if
// not nil, is told. It returns ctx's error.
func (r *Relay) Run(ctx context.Context, onError func(error)) error {
	for {
		res, err := r.Pass(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && onError != nil {
			onError(err)
		}
		if err == nil && res.More {
			continue
		}
		wait := r.poll
		if !res.NextRetry.IsZero() {
			wait = min(wait, max(res.NextRetry.Sub(r.outbox.clock.Now()), 0))
		}
		timer := r.outbox.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-r.wake:
			timer.Stop()
		case <-timer.Chan():
		}
	}
}

// PassResult is what one pass did.
type PassResult struct {
	// Delivered, Refused and Parked count the pass's deliveries.
	Delivered, Refused, Parked int
	// More is true when the pass stopped at a full page: pass again.
	More bool
	// NextRetry is the earliest retry the pass left waiting, or zero.
	NextRetry time.Time
}

// pending is a record read by a pass, with the sink's refusals so far.
type pending struct {
	recordRow
	attempts int
	nextAt   time.Time
}

// Pass delivers the records committed after the sink's checkpoint, a page
// at a time until a page is not full: each stream's in order, streams in
// parallel, a stream stopping at a refusal (retried once its backoff
// ends, by a later pass). It then moves the checkpoints past what was
// delivered or parked.
func (r *Relay) Pass(ctx context.Context) (PassResult, error) {
	r.stats.passes.Add(1)
	res, err := r.pass(ctx)
	if err != nil {
		r.stats.failed.Add(1)
		return res, fmt.Errorf("outbox: relay %q: %w", r.sink, err)
	}
	return res, nil
}

func (r *Relay) pass(ctx context.Context) (PassResult, error) {
	var res PassResult
	o := r.outbox
	from, err := o.d.checkpoint(ctx, r.sink)
	if err != nil {
		return res, fmt.Errorf("read the checkpoint: %w", err)
	}
	retries, err := r.retries(ctx)
	if err != nil {
		return res, err
	}
	rows, err := o.d.records(ctx, r.sink, from, r.page)
	if err != nil {
		return res, fmt.Errorf("read the records after (%d, %d): %w", from.Tx, from.ID, err)
	}
	res.More = len(rows) == r.page
	now := o.clock.Now()
	streams, order := map[string][]pending{}, []string(nil)
	for _, row := range rows {
		p := pending{recordRow: row}
		if a, ok := retries[row.Position]; ok {
			p.attempts, p.nextAt = a.Attempts, sqldb.DecodeTime(a.NextAt)
		}
		if _, seen := streams[row.Stream]; !seen {
			order = append(order, row.Stream)
		}
		streams[row.Stream] = append(streams[row.Stream], p)
	}
	// Each stream reports the first of its records it left undelivered.
	stuck := make(map[string]*pending, len(order))
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, r.parallel)
	var wg sync.WaitGroup
	for _, name := range order {
		records := streams[name]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			left, out, err := r.deliverStream(ctx, records, now)
			mu.Lock()
			defer mu.Unlock()
			res.Delivered += out.Delivered
			res.Refused += out.Refused
			res.Parked += out.Parked
			if left != nil {
				stuck[name] = left
				if !left.nextAt.IsZero() && (res.NextRetry.IsZero() || left.nextAt.Before(res.NextRetry)) {
					res.NextRetry = left.nextAt
				}
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	// The sink's checkpoint moves up to the first record left behind:
	// everything before it in the page is delivered or parked, and what
	// the page did not show was passed by its stream's checkpoint.
	if len(rows) == 0 {
		return res, nil
	}
	to := rows[len(rows)-1]
	toTx, toID := to.Tx, to.Position
	for _, row := range rows {
		if p := stuck[row.Stream]; p != nil && p.Position == row.Position {
			toTx, toID = row.Tx, row.Position-1
			res.More = false // the rest waits for that record
			break
		}
	}
	if err := o.d.advance(ctx, r.sink, "", position{toTx, toID}); err != nil {
		return res, fmt.Errorf("move the checkpoint to (%d, %d): %w", toTx, toID, err)
	}
	return res, nil
}

// retries reads the sink's refusals of records still in delivery.
func (r *Relay) retries(ctx context.Context) (map[int64]retryRow, error) {
	rows, err := r.outbox.d.retries(ctx, r.sink)
	if err != nil {
		return nil, fmt.Errorf("read the refusals: %w", err)
	}
	out := make(map[int64]retryRow, len(rows))
	for _, a := range rows {
		out[a.Position] = a
	}
	return out, nil
}

// deliverStream delivers one stream's records in order and moves its
// checkpoint past what it delivered or parked. It returns the record it
// stopped at (refused now, or still waiting out a backoff), or nil.
func (r *Relay) deliverStream(ctx context.Context, records []pending, now time.Time) (*pending, PassResult, error) {
	var out PassResult
	var last *pending // the last record delivered or parked
	var left *pending
	var cleared []int64 // delivered after refusals: their refusals go
	for i := range records {
		p := &records[i]
		if p.nextAt.After(now) {
			left = p
			break
		}
		m := p.message(p.attempts + 1)
		err := safely(func() error { return r.deliver(ctx, m) })
		if err != nil && ctx.Err() != nil {
			left = p // stopping: not a refusal, and what came before is kept
			break
		}
		if err == nil {
			out.Delivered++
			r.stats.delivered.Add(1)
			if p.attempts > 0 {
				cleared = append(cleared, p.Position)
			}
			if f := r.observer.Delivered; f != nil {
				f(m, r.outbox.clock.Now().Sub(m.RecordedAt))
			}
			last = p
			continue
		}
		out.Refused++
		r.stats.refused.Add(1)
		p.attempts++
		parked := p.attempts >= r.maxAttempts
		p.nextAt = r.outbox.clock.Now().Add(r.backoff(p.attempts))
		if werr := r.outbox.d.refused(ctx, r.sink, p.Position, p.attempts, sqldb.EncodeTime(p.nextAt), err.Error(), parked); werr != nil {
			return p, out, fmt.Errorf("record the refusal of %q: %w", p.Key, werr)
		}
		if !parked {
			if f := r.observer.Refused; f != nil {
				f(m, err, p.nextAt)
			}
			left = p
			break
		}
		out.Parked++
		r.stats.parked.Add(1)
		if f := r.observer.Parked; f != nil {
			f(m, err)
		}
		last = p // its stream goes on without it
	}
	if last != nil {
		// Even when the relay is stopping: what the sink took is not
		// offered again.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
		defer cancel()
		for _, position := range cleared {
			if err := r.outbox.d.delivered(ctx, r.sink, position); err != nil {
				return left, out, fmt.Errorf("clear the refusals of record %d: %w", position, err)
			}
		}
		if err := r.outbox.d.advance(ctx, r.sink, last.Stream, position{last.Tx, last.Position}); err != nil {
			return left, out, fmt.Errorf("move the checkpoint of stream %q: %w", last.Stream, err)
		}
	}
	return left, out, nil
}

// checkpointTimeout bounds the write of a stream's checkpoint after the
// relay's context ended.
const checkpointTimeout = 5 * time.Second

// backoff is the wait after the nth refusal.
func (r *Relay) backoff(n int) time.Duration {
	d := r.backoffBase
	for i := 1; i < n && d < r.backoffMax; i++ {
		d *= 2
	}
	return min(d, r.backoffMax)
}

// safely turns a panicking sink into a refusal.
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("outbox: deliver panicked: %v", p)
		}
	}()
	return f()
}
