package outbox

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Run delivers until ctx ends, with no barrier between streams: each
// stream is a lane of its own, and a stream's delivery never waits for
// another's. A dispatcher reads the outbox in delivery order from a
// cursor of its own — at once, whenever Notify is called, at every poll,
// and again while reads find full pages — and hands each record to its
// stream's lane; WithParallel workers take lanes in turn, one record
// each, so a request that stalls holds its own stream (and its retries)
// and one of the requests in flight, nothing else. A refused record waits
// out its backoff on the outbox's clock without holding a request.
//
// The sink's checkpoint moves to the minimum of what is fully settled:
// just before the first record of any lane not settled yet, and never
// past what the dispatcher read, so it never passes a stalled record and
// never one that commits late (the horizon, as for Pass). Each stream's
// checkpoint moves past its record as soon as the sink took it, in one
// statement with the other streams' settling at that moment (group
// commit), before the stream's next record is offered.
//
// When ctx ends, the requests in flight are cancelled (a Deliver should
// honour ctx; one that finishes its request instead has it recorded) and
// Run returns ctx's error once each has ended, the checkpoints of what
// the sink took written. The record of a stream whose
// request was cut short is offered again by the next relay: at most one
// record per stream, WithParallel in all, may be delivered twice across a
// stop or a crash, and none is skipped. A failing database operation is
// told to onError (if not nil) and retried after a poll.
func (r *Relay) Run(ctx context.Context, onError func(error)) error {
	u := &runner{r: r, ctx: ctx, onError: onError, lanes: map[string]*lane{}, settledOne: make(chan struct{}, 1)}
	u.cond = sync.NewCond(&u.mu)
	for {
		from, err := r.start(ctx)
		if err == nil {
			u.read, u.written = from, from
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		u.fail(err)
		t := time.NewTimer(r.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	u.commit = r.newCommitter(ctx)
	for range r.parallel {
		u.workers.Add(1)
		go u.work()
	}
	u.dispatch()

	u.mu.Lock()
	u.stopping = true
	for _, l := range u.lanes {
		if l.timer != nil {
			l.timer.Stop()
		}
	}
	u.cond.Broadcast()
	u.mu.Unlock()
	u.workers.Wait()
	u.commit.stop()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
	defer cancel()
	u.checkpoint(wctx)
	return ctx.Err()
}

// start decides where the relay starts (Origin) and reads the sink's
// checkpoint.
func (r *Relay) start(ctx context.Context) (position, error) {
	if _, err := r.ensureOrigin(ctx); err != nil {
		return position{}, err
	}
	from, err := r.outbox.d.checkpoint(ctx, r.sink)
	if err != nil {
		return position{}, fmt.Errorf("read the checkpoint: %w", err)
	}
	return from, nil
}

// lane is one stream's records in a Run, in order; every field is
// guarded by runner.mu, and only the worker that has the lane (busy)
// changes its first record.
type lane struct {
	stream string
	// queue holds the stream's records handed to the lane and not settled
	// yet, in order; queue[0] is the one offered next (or being offered).
	queue []pending
	// last is the last of the stream's records handed to the lane.
	last position
	// behind: records of the stream after last were read and not kept
	// (the lane held a page, or a refusal let the rest go): once its
	// queue is empty the lane reads them itself (streamRecords).
	behind bool
	// dropped: a record after last was not kept since the lane's last
	// read of its own began, so that read may have missed it.
	dropped bool
	// busy: a worker has the lane; queued: it waits in runner.ready for
	// a worker; waiting: its first record waits out a backoff (or the
	// lane a failed database operation), timer set.
	busy, queued, waiting bool
	timer                 interface{ Stop() bool }
}

// runner is one Run's state.
type runner struct {
	r       *Relay
	ctx     context.Context
	onError func(error)
	commit  *committer
	workers sync.WaitGroup
	// settledOne wakes the dispatcher when a worker settled or let go a
	// record: a read the memory bound held back may go on.
	settledOne chan struct{}
	// written is the sink checkpoint last written (the dispatcher's).
	written position

	mu    sync.Mutex
	cond  *sync.Cond // signalled when ready gains a lane or Run stops
	lanes map[string]*lane
	// ready[next:] are the lanes with a record to offer (or to read),
	// oldest first.
	ready []*lane
	next  int
	// read is the dispatcher's cursor: every record up to it was handed
	// to its lane, or left to a lane that is behind, or settled.
	read     position
	stopping bool
}

// dispatch reads and hands records out until ctx ends.
func (u *runner) dispatch() {
	poll := time.NewTimer(u.r.poll)
	defer poll.Stop()
	want := true // a read may find records
	for u.ctx.Err() == nil {
		if want && u.roomToRead() {
			more, err := u.readPage()
			if err != nil {
				if u.ctx.Err() == nil {
					u.fail(err)
				}
				more = false // until the next poll
			}
			u.checkpoint(u.ctx)
			if want = more; want {
				continue
			}
		}
		select {
		case <-u.ctx.Done():
		case <-u.r.wake:
			want = true
		case <-u.settledOne:
		case <-poll.C:
			want = true
			poll.Reset(u.r.poll)
		}
	}
}

// roomToRead reports whether fewer than a page of records wait for a
// worker: the memory bound. Records of lanes being delivered or waiting
// out a backoff do not count, so stalled streams never stop the others'
// records from being read.
func (u *runner) roomToRead() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, l := range u.lanes {
		if !l.busy && !l.waiting {
			n += len(l.queue)
		}
	}
	return n < u.r.page
}

// readPage reads a page after the cursor and hands each record to its
// lane. It reports whether the page was full.
func (u *runner) readPage() (bool, error) {
	r := u.r
	r.stats.passes.Add(1)
	u.mu.Lock()
	from := u.read
	u.mu.Unlock()
	rows, err := r.outbox.d.records(u.ctx, r.sink, from, r.page)
	if err != nil {
		return false, fmt.Errorf("read the records after (%d, %d): %w", from.Tx, from.ID, err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, row := range rows {
		u.hand(row)
	}
	if len(rows) > 0 {
		u.read = rows[len(rows)-1].at()
	}
	// A lane kept while it had read past the cursor goes once the cursor
	// passed what it read (see schedule).
	for _, l := range u.lanes {
		if l.idle() && !u.read.before(l.last) {
			delete(u.lanes, l.stream)
		}
	}
	return len(rows) == r.page, nil
}

// hand gives row to its stream's lane, unless the lane has had it (it
// read it itself) or cannot keep it (it holds a page, or is behind):
// then the lane reads it itself later. u.mu is held.
func (u *runner) hand(row recordRow) {
	l := u.lanes[row.Stream]
	switch {
	case l == nil:
		l = &lane{stream: row.Stream}
		u.lanes[row.Stream] = l
	case !l.last.before(row.at()):
		return
	case l.behind || len(l.queue) >= u.r.page:
		l.behind, l.dropped = true, true
		return
	}
	l.queue = append(l.queue, pendingOf(row))
	l.last = row.at()
	u.schedule(l)
}

// idle reports whether the lane has nothing to do or wait for.
func (l *lane) idle() bool {
	return len(l.queue) == 0 && !l.behind && !l.busy && !l.queued && !l.waiting
}

// schedule puts a lane that has work and no worker in the ready queue,
// or sets the timer of its first record's backoff, or forgets a lane
// with nothing left. u.mu is held.
func (u *runner) schedule(l *lane) {
	if l.busy || l.queued || l.waiting || u.halting() {
		return
	}
	if l.idle() {
		// Kept while it read past the dispatcher's cursor: a page read
		// before its records' checkpoints moved may still hold them, and
		// the lane's last tells them apart (hand).
		if !u.read.before(l.last) {
			delete(u.lanes, l.stream)
		}
		return
	}
	if len(l.queue) > 0 {
		clock := u.r.outbox.clock
		if wait := l.queue[0].nextAt.Sub(clock.Now()); wait > 0 {
			l.waiting = true
			l.timer = clock.AfterFunc(wait, func() { u.wake(l) })
			return
		}
	}
	l.queued = true
	u.ready = append(u.ready, l)
	u.cond.Signal()
}

// pause makes the lane wait a poll, in real time, after a database
// operation failed. u.mu is held.
func (u *runner) pause(l *lane) {
	if u.halting() {
		return
	}
	l.waiting = true
	l.timer = time.AfterFunc(u.r.poll, func() { u.wake(l) })
}

// halting reports whether Run is stopping: no record is offered any
// more (one offered now would only be cut short). u.mu is held.
func (u *runner) halting() bool { return u.stopping || u.ctx.Err() != nil }

// wake ends a lane's wait.
func (u *runner) wake(l *lane) {
	u.mu.Lock()
	defer u.mu.Unlock()
	l.waiting, l.timer = false, nil
	u.schedule(l)
	u.nudge()
}

// nudge tells the dispatcher that the memory bound may have moved.
func (u *runner) nudge() {
	select {
	case u.settledOne <- struct{}{}:
	default:
	}
}

// work takes lanes from the ready queue until Run stops: one record of
// the lane offered and settled (or the lane's own records read), then
// the lane goes to the back of the queue if it has more.
func (u *runner) work() {
	defer u.workers.Done()
	reply := make(chan error, 1)
	for {
		u.mu.Lock()
		for u.next == len(u.ready) && !u.stopping {
			u.cond.Wait()
		}
		if u.stopping {
			u.mu.Unlock()
			return
		}
		l := u.ready[u.next]
		u.ready[u.next] = nil
		if u.next++; u.next == len(u.ready) {
			u.ready, u.next = u.ready[:0], 0 // the array is used again
		} else if u.next >= 1024 && u.next*2 >= len(u.ready) {
			n := copy(u.ready, u.ready[u.next:])
			clear(u.ready[n:])
			u.ready, u.next = u.ready[:n], 0
		}
		l.queued, l.busy = false, true
		if len(l.queue) == 0 {
			u.refill(l) // unlocks and locks u.mu
		} else {
			u.offer(l, reply)
		}
		l.busy = false
		u.schedule(l)
		u.mu.Unlock()
		u.nudge()
	}
}

// offer offers the lane's first record and settles it. u.mu is held on
// entry and exit, not while the sink is called; the first record is
// copied out and back because the dispatcher may grow the queue.
func (u *runner) offer(l *lane, reply chan error) {
	p := l.queue[0]
	u.mu.Unlock()
	o, err := u.r.offer(u.ctx, &p)
	if err == nil && (o == taken || o == parked) {
		// Even when the relay is stopping: what the sink took is not
		// offered again (the committer's context outlives the relay's).
		if err = u.commit.settle(p.settlement(), reply); err != nil {
			err = fmt.Errorf("move the checkpoint of stream %q past %q: %w", p.Stream, p.Key, err)
		}
	}
	if err != nil && u.ctx.Err() == nil {
		u.fail(err)
	}
	u.mu.Lock()
	l.queue[0] = p
	switch {
	case err != nil && p.final != 0:
		// The sink's answer is kept; the checkpoint is tried again.
		u.pause(l)
	case o == taken || o == parked:
		l.queue[0] = pending{}
		l.queue = l.queue[1:]
	case o == refused && len(l.queue) > 1:
		// While it waits, the stream's later records need no memory:
		// the lane reads them again once this one is settled.
		clear(l.queue[1:])
		l.queue = l.queue[:1]
		l.last = p.at()
		l.behind = true
	}
}

// refill reads the records of a lane that is behind. u.mu is held on
// entry and exit, not during the read.
func (u *runner) refill(l *lane) {
	l.dropped = false
	from := l.last
	u.mu.Unlock()
	rows, err := u.r.outbox.d.streamRecords(u.ctx, u.r.sink, l.stream, from, u.r.page)
	u.mu.Lock()
	if err != nil {
		if u.ctx.Err() == nil {
			u.fail(fmt.Errorf("read the records of stream %q after (%d, %d): %w", l.stream, from.Tx, from.ID, err))
		}
		u.pause(l)
		return
	}
	for _, row := range rows {
		l.queue = append(l.queue, pendingOf(row))
	}
	if len(rows) > 0 {
		l.last = rows[len(rows)-1].at()
	}
	// Complete unless the page was full or the dispatcher let a record go
	// while the read ran (it may have come after the read's snapshot).
	l.behind = len(rows) == u.r.page || l.dropped
}

// settledUpTo is where the sink's checkpoint may move: every record up to
// it is settled. It is the dispatcher's cursor, or just before the first
// record of a lane not settled yet if that is earlier. u.mu is held.
func (u *runner) settledUpTo() position {
	to := u.read
	for _, l := range u.lanes {
		var c position
		switch {
		case len(l.queue) > 0:
			c = l.queue[0].at().justBefore()
		case l.behind:
			c = l.last // settled up to there; what follows is unknown
		default:
			continue
		}
		if c.before(to) {
			to = c
		}
	}
	return to
}

// checkpoint moves the sink's checkpoint to settledUpTo, if it rose.
func (u *runner) checkpoint(ctx context.Context) {
	u.mu.Lock()
	to := u.settledUpTo()
	u.mu.Unlock()
	if !u.written.before(to) {
		return
	}
	if err := u.r.outbox.d.advance(ctx, u.r.sink, "", to); err != nil {
		if ctx.Err() == nil {
			u.fail(fmt.Errorf("move the checkpoint to (%d, %d): %w", to.Tx, to.ID, err))
		}
		return
	}
	u.written = to
}

// fail counts a failed database operation and tells onError.
func (u *runner) fail(err error) {
	u.r.stats.failed.Add(1)
	if u.onError != nil {
		u.onError(fmt.Errorf("outbox: relay %q: %w", u.r.sink, err))
	}
}
