package outbox

import (
	"context"
	"errors"
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
	// Started is called once the relay decided where it delivers from
	// (Relay.Origin), before its first delivery: a log line saying so.
	Started func(o Origin)
}

// Stats are a relay's counts since it was made.
type Stats struct {
	// Delivered counts deliveries the sink took, Refused those it did
	// not (each retried or parked), Parked the records given up.
	Delivered, Refused, Parked int64
	// Passes counts reads of the outbox (a Pass, or a page Run read),
	// Failed the database operations that failed (not a sink's).
	Passes, Failed int64
}

// Relay delivers one sink's records: see the package documentation. Run
// delivers until its context ends, each stream on its own; Pass delivers
// one page of what is committed now and waits for it, for tests, drains
// and run-once commands.
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
	from        From
	made        time.Time // when NewRelay made it: FromNow's instant

	originMu sync.Mutex             // held while Origin decides
	origin   atomic.Pointer[Origin] // decided once (Origin)

	wake  chan struct{}
	stats struct{ delivered, refused, parked, passes, failed atomic.Int64 }
}

// RelayOption configures a [Relay]. An unusable value makes NewRelay
// fail with [ErrInvalidOption].
type RelayOption func(*Relay) error

// WithParallel sets how many records are offered to the sink at once,
// each of a different stream (default 16): Run keeps up to n requests in
// flight whatever any one of them waits for, so a slow or stalled request
// delays its own stream only, until n of them are stalled; a pass
// delivers n streams at a time.
func WithParallel(n int) RelayOption {
	return func(r *Relay) error {
		if n < 1 {
			return fmt.Errorf("%w: WithParallel(%d): at least 1", ErrInvalidOption, n)
		}
		r.parallel = n
		return nil
	}
}

// WithPage sets how many records one read takes (default 1,000). It also
// bounds what Run holds in memory: up to a page of records waiting for a
// free request, up to a page per stream being delivered, and the first
// record of each stream waiting out a refusal's backoff.
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
// (default one second), in real time: what it waits for happens in the
// database (another process's commit, a record PostgreSQL's horizon held
// back), not on the outbox's clock. Refusals' retries follow the clock.
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
// intent; two deliver some records twice and skip none. A sink the outbox
// has never seen starts with the records written from now on, unless
// WithFrom says otherwise (see Relay.Origin).
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
		made: o.clock.Now(),
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
// every pending record's row, so it costs what a pass would read. It
// only reads: before the relay decided where it starts (Origin), it
// counts from where Origin would start, writing nothing and waiting for
// no write.
func (r *Relay) Backlog(ctx context.Context) (Backlog, error) {
	var b Backlog
	o := r.outbox
	from, err := r.readFrom(ctx)
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

// PassResult is what one pass did.
type PassResult struct {
	// Delivered, Refused and Parked count the pass's deliveries.
	Delivered, Refused, Parked int
	// More is true when the pass stopped at a full page: pass again.
	More bool
	// NextRetry is the earliest retry the pass left waiting, or zero.
	NextRetry time.Time
}

// pending is a record read for delivery, with the sink's refusals of it
// so far.
type pending struct {
	recordRow
	attempts int
	nextAt   time.Time // when it may be offered again; zero: at once
	// final is what the sink's answer came to (taken or parked) once it
	// came; until its stream's checkpoint has moved past the record, only
	// that move is retried, the record is not offered again.
	final outcome
}

func pendingOf(row recordRow) pending {
	p := pending{recordRow: row, attempts: row.RetryAttempts}
	if row.RetryNextAt != 0 {
		p.nextAt = sqldb.DecodeTime(row.RetryNextAt)
	}
	return p
}

// outcome is what offering a record to the sink came to.
type outcome int

const (
	_ outcome = iota
	// stopped: the relay stopped before the sink answered; nothing is
	// recorded and the record is offered again by the next relay.
	stopped
	// refused: the refusal is stored; the record is offered again at its
	// nextAt.
	refused
	// taken: the sink took it; its stream's checkpoint is to pass it.
	taken
	// parked: refused for the last time and stored as parked (it stays
	// listed); its stream's checkpoint is to pass it.
	parked
)

// Pass delivers the records committed after the sink's checkpoint, one
// page, and returns once every delivery it started has ended: each
// stream's in order, streams in parallel (WithParallel at a time), a
// stream stopping at a refusal (retried once its backoff ends, by a later
// pass). It then moves the sink's checkpoint up to the first record left
// behind. Since it waits for its slowest delivery, a loop of passes holds
// every stream back behind a stalled one: for tests, run-once commands
// and drains; Run delivers without that barrier.
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
	if _, err := r.ensureOrigin(ctx); err != nil {
		return res, err
	}
	from, err := o.d.checkpoint(ctx, r.sink)
	if err != nil {
		return res, fmt.Errorf("read the checkpoint: %w", err)
	}
	rows, err := o.d.records(ctx, r.sink, from, r.page)
	if err != nil {
		return res, fmt.Errorf("read the records after (%d, %d): %w", from.Tx, from.ID, err)
	}
	if len(rows) == 0 {
		return res, nil
	}
	res.More = len(rows) == r.page
	now := o.clock.Now()
	streams, order := map[string][]pending{}, []string(nil)
	for _, row := range rows {
		if _, seen := streams[row.Stream]; !seen {
			order = append(order, row.Stream)
		}
		streams[row.Stream] = append(streams[row.Stream], pendingOf(row))
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
	to := rows[len(rows)-1].at()
	for _, row := range rows {
		if p := stuck[row.Stream]; p != nil && p.Position == row.Position {
			to = row.at().justBefore()
			res.More = false // the rest waits for that record
			break
		}
	}
	if err := o.d.advance(ctx, r.sink, "", to); err != nil {
		return res, fmt.Errorf("move the checkpoint to (%d, %d): %w", to.Tx, to.ID, err)
	}
	return res, nil
}

// deliverStream delivers one stream's records in order, then moves the
// stream's checkpoint past what was taken or parked, once (even when the
// relay is stopping: what the sink took is not offered again). It
// returns the record it stopped at (refused now, or still waiting out a
// backoff), or nil.
func (r *Relay) deliverStream(ctx context.Context, records []pending, now time.Time) (*pending, PassResult, error) {
	var out PassResult
	var left *pending
	var err error
	var done []settled // what to record: the refusals to clear, the last record settled
	for i := range records {
		p := &records[i]
		if p.nextAt.After(now) {
			left = p
			break
		}
		var o outcome
		o, err = r.offer(ctx, p)
		switch o {
		case taken:
			out.Delivered++
		case parked:
			out.Refused++
			out.Parked++
		case refused:
			out.Refused++
		}
		if err != nil || o == refused || o == stopped {
			left = p
			break
		}
		done = append(done, p.settlement())
	}
	if len(done) > 0 {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
		defer cancel()
		if serr := r.outbox.d.settle(ctx, r.sink, done); serr != nil {
			err = errors.Join(err, fmt.Errorf("move the checkpoint of stream %q: %w", done[0].stream, serr))
		}
	}
	return left, out, err
}

// offer offers p, the first record of its stream not settled, to the
// sink and stores a refusal (with its next attempt, or the record
// parked). What the sink answered is kept in p.final (taken or parked):
// a record whose checkpoint could not be moved is not offered again.
func (r *Relay) offer(ctx context.Context, p *pending) (outcome, error) {
	if p.final != 0 {
		return p.final, nil
	}
	m := p.message(p.attempts + 1)
	err := safely(func() error { return r.deliver(ctx, m) })
	switch {
	case err != nil && ctx.Err() != nil:
		return stopped, nil // not a refusal, and what came before is kept
	case err == nil:
		p.final = taken
		r.stats.delivered.Add(1)
		if f := r.observer.Delivered; f != nil {
			f(m, r.outbox.clock.Now().Sub(m.RecordedAt))
		}
		return taken, nil
	}
	r.stats.refused.Add(1)
	p.attempts++
	last := p.attempts >= r.maxAttempts
	p.nextAt = r.outbox.clock.Now().Add(r.backoff(p.attempts))
	if werr := r.outbox.d.refused(ctx, r.sink, refusal{
		record: p.Position, attempts: p.attempts, nextAt: sqldb.EncodeTime(p.nextAt), lastError: err.Error(), parked: last,
	}); werr != nil {
		// Not parked unless stored as parked: offered again.
		return refused, fmt.Errorf("record the refusal of %q: %w", p.Key, werr)
	}
	if !last {
		if f := r.observer.Refused; f != nil {
			f(m, err, p.nextAt)
		}
		return refused, nil
	}
	p.final = parked
	r.stats.parked.Add(1)
	if f := r.observer.Parked; f != nil {
		f(m, err)
	}
	return parked, nil
}

// settlement is what records that the sink is done with p.
func (p *pending) settlement() settled {
	return settled{stream: p.Stream, at: p.at(), cleared: p.final == taken && p.attempts > 0}
}

// committer moves Run's stream checkpoints in groups: every record
// settled while the statements under way commit joins the next one, so
// N streams settling at once cost a few commits, not N (group commit). A lane waits
// for its record's commit before its stream's next record is offered, so
// the sink took at most one record of a stream that its checkpoint does
// not pass yet: the one a crash may have it take again.
type committer struct {
	d    driver
	sink string
	ctx  context.Context // the relay's, without its cancellation
	in   chan settleRequest
	quit chan struct{}
	done chan struct{}
}

type settleRequest struct {
	s     settled
	reply chan error
}

// maxGroup bounds the records one checkpoint statement settles, and
// maxCommits the statements under way at once: a database that groups
// concurrent commits itself (PostgreSQL's WAL flush) gets a few, and
// each carries what arrived while the others committed.
const maxGroup, maxCommits = 256, 4

// newCommitter starts a committer for sink; stop it once nothing settles
// any more.
func (r *Relay) newCommitter(ctx context.Context) *committer {
	c := &committer{
		d: r.outbox.d, sink: r.sink, ctx: context.WithoutCancel(ctx),
		in: make(chan settleRequest), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go c.loop()
	return c
}

// settle records s in the next group and returns once it committed.
func (c *committer) settle(s settled, reply chan error) error {
	c.in <- settleRequest{s, reply}
	return <-reply
}

// stop ends the committer; no settle may be under way or follow.
func (c *committer) stop() {
	close(c.quit)
	<-c.done
}

func (c *committer) loop() {
	defer close(c.done)
	var running sync.WaitGroup
	defer running.Wait()
	slots := make(chan struct{}, maxCommits)
	for {
		var group []settleRequest
		select {
		case q := <-c.in:
			group = []settleRequest{q} // most groups are small
		case <-c.quit:
			return
		}
		// While every slot commits, what arrives joins this group.
		for free := false; !free; {
			in := c.in
			if len(group) == maxGroup {
				in = nil
			}
			select {
			case slots <- struct{}{}:
				free = true
			case q := <-in:
				group = append(group, q)
			}
		}
	gather:
		for len(group) < maxGroup {
			select {
			case q := <-c.in:
				group = append(group, q)
			default:
				break gather
			}
		}
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() { <-slots }()
			done := make([]settled, len(group))
			for i, q := range group {
				done[i] = q.s
			}
			ctx, cancel := context.WithTimeout(c.ctx, checkpointTimeout)
			err := c.d.settle(ctx, c.sink, done)
			cancel()
			for _, q := range group {
				q.reply <- err
			}
		}()
	}
}

// checkpointTimeout bounds a checkpoint's write, which goes on after the
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
