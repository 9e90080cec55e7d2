package bus

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// maxBatch bounds how many unkeyed events a worker takes at once; a
	// worker also takes no more than its share of what is queued (see
	// work), so that it does not hoard a burst the others could run.
	maxBatch = 64
	// maxSpareKeys bounds the idle per-key queues kept for reuse.
	maxSpareKeys = 4096
)

// queue is an asynchronous subscription's bounded queue and its workers.
//
// Without a key function it is one FIFO that the workers take batches from.
// With one, it is the scheduler of an actor runtime: a FIFO per key, and a
// ready queue of keys that have events and are not being run. A worker takes
// a key from the ready queue with every event queued for it so far, runs
// them in order, and puts the key back if more arrived meanwhile. A key is
// thus on at most one worker at a time, which gives per-key order without a
// lock per key, and a batch per hand-off keeps the shared lock cheap.
type queue[E any] struct {
	sub       *subscription
	handler   func(context.Context, E) error
	chain     Handler // handler inside its middleware; nil without middleware
	key       func(E) string
	capacity  int
	eventType string // E's name when E is concrete; else looked up per event

	mu      sync.Mutex
	wake    sync.Cond // signalled when work arrives or the queue closes
	idle    int       // workers waiting on wake
	pending int       // events queued and not yet taken by a worker
	// space is closed, and reset to nil, when events are taken out of a
	// full queue; publishers waiting for room select on it and their ctx.
	space   chan struct{}
	closed  bool
	running int
	exited  chan struct{}
	// abandoned is set by Close when its context ends: workers take no
	// more events, and report those they hold (see worker).
	abandoned bool
	workers   []*worker

	fifo  ring[E]                 // unkeyed
	keys  map[string]*keyQueue[E] // keyed: keys with queued or running events
	ready ring[*keyQueue[E]]      // keyed: keys waiting for a worker
	spare []*keyQueue[E]          // keyed: idle key queues for reuse
}

// worker is what abandon needs to know of a worker: how many events of the
// batch it holds it has not started. Each event is claimed exactly once,
// by the worker decrementing the count to run it or by abandon swapping it
// to zero to count it as abandoned, so the count Close reports is exact.
type worker struct {
	unclaimed atomic.Int64
}

// keyQueue holds one key's events. scheduled is true while the key is in
// the ready queue or on a worker, which is what keeps it on one worker.
type keyQueue[E any] struct {
	key       string
	events    []E
	scheduled bool
}

func newQueue[E any](s *subscription, handler func(context.Context, E) error, chain Handler, key func(E) string, workers, capacity int) *queue[E] {
	q := &queue[E]{
		sub: s, handler: handler, chain: chain, key: key, capacity: capacity,
		running: workers, exited: make(chan struct{}),
	}
	if t := reflect.TypeFor[E](); t.Kind() != reflect.Interface {
		q.eventType = t.String()
	}
	q.wake.L = &q.mu
	if key != nil {
		q.keys = make(map[string]*keyQueue[E])
	}
	for range workers {
		w := &worker{}
		q.workers = append(q.workers, w)
		go q.work(w)
	}
	return q
}

// push enqueues event, waiting while the queue is full. It returns ErrClosed
// once the bus is closed, and nil without enqueuing once the subscription is
// unsubscribed: the event is no longer for it.
func (q *queue[E]) push(ctx context.Context, event E) error {
	var key string
	if q.key != nil {
		var err error
		if key, err = safeKey(q.key, event); err != nil {
			return fmt.Errorf("computing the event's key: %w", err)
		}
	}
	q.mu.Lock()
	for q.pending >= q.capacity && !q.closed {
		if q.space == nil {
			q.space = make(chan struct{})
		}
		space := q.space
		q.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return fmt.Errorf("waiting for room in the queue (%d events): %w", q.capacity, ctx.Err())
		}
		q.mu.Lock()
	}
	if q.closed {
		q.mu.Unlock()
		if q.sub.bus.routing.Load().closed {
			return ErrClosed
		}
		return nil
	}
	q.pending++
	if q.key == nil {
		q.fifo.push(event)
		q.signalLocked()
	} else {
		kq := q.keys[key]
		if kq == nil {
			kq = q.newKeyLocked(key)
		}
		kq.events = append(kq.events, event)
		if !kq.scheduled {
			kq.scheduled = true
			q.ready.push(kq)
			q.signalLocked()
		}
	}
	q.mu.Unlock()
	return nil
}

func safeKey[E any](key func(E) string, event E) (k string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = newPanicError(v)
		}
	}()
	return key(event), nil
}

func (q *queue[E]) signalLocked() {
	if q.idle > 0 {
		q.wake.Signal()
	}
}

func (q *queue[E]) newKeyLocked(key string) *keyQueue[E] {
	var kq *keyQueue[E]
	if n := len(q.spare); n > 0 {
		kq, q.spare = q.spare[n-1], q.spare[:n-1]
		kq.key = key
	} else {
		kq = &keyQueue[E]{key: key}
	}
	q.keys[key] = kq
	return kq
}

func (q *queue[E]) emptyLocked() bool {
	if q.key == nil {
		return q.fifo.len() == 0
	}
	return q.ready.len() == 0
}

func (q *queue[E]) work(w *worker) {
	var batch []E
	q.mu.Lock()
	for {
		for q.emptyLocked() && !q.closed && !q.abandoned {
			q.idle++
			q.wake.Wait()
			q.idle--
		}
		if q.emptyLocked() || q.abandoned {
			break
		}
		var kq *keyQueue[E]
		if q.key == nil {
			// Take a fair share, rounded up: a burst of as many events as
			// there are workers runs one event per worker, in parallel.
			share := (q.fifo.len() + len(q.workers) - 1) / len(q.workers)
			batch = q.fifo.popInto(batch[:0], min(maxBatch, share))
		} else {
			kq = q.ready.pop()
			// Swap buffers: the key keeps the worker's empty one for what
			// arrives while this batch runs.
			batch, kq.events = kq.events, batch[:0]
		}
		q.pending -= len(batch)
		w.unclaimed.Store(int64(len(batch)))
		if q.space != nil {
			close(q.space)
			q.space = nil
		}
		// A push signals one idle worker however much it queued before
		// that worker woke; pass the wake-up on while work is left.
		if !q.emptyLocked() {
			q.signalLocked()
		}
		q.mu.Unlock()
		q.runBatch(w, batch)
		clear(batch)
		q.mu.Lock()
		if kq != nil {
			q.doneWithKeyLocked(kq)
		}
	}
	q.running--
	last := q.running == 0
	q.mu.Unlock()
	if last {
		b := q.sub.bus
		b.mu.Lock()
		delete(b.queues, q.sub)
		b.mu.Unlock()
		close(q.exited)
	}
}

// doneWithKeyLocked puts a key back in the ready queue if events arrived
// while it ran, and otherwise forgets it, so that a key space that only
// grows (order IDs) does not grow the map.
func (q *queue[E]) doneWithKeyLocked(kq *keyQueue[E]) {
	if len(kq.events) > 0 {
		q.ready.push(kq)
		return
	}
	kq.scheduled = false
	delete(q.keys, kq.key)
	if len(q.spare) < maxSpareKeys {
		kq.key = ""
		q.spare = append(q.spare, kq)
	}
}

func (q *queue[E]) runBatch(w *worker, batch []E) {
	for i, event := range batch {
		if w.unclaimed.Add(-1) < 0 {
			for _, event := range batch[i:] {
				q.report(event, ErrAbandoned)
			}
			return
		}
		q.run(event)
	}
}

// run calls the handler for one event and reports its outcome: a failure
// to the dead-letter callback (or the logger), and both to the observer.
func (q *queue[E]) run(event E) {
	b := q.sub.bus
	ctx := b.workCtx
	obs := b.cfg.observer
	var start time.Time
	if obs != nil {
		start = b.cfg.clock.Now()
	}
	var err error
	if q.chain != nil {
		err = invokeAny(ctx, q.chain, any(event))
	} else {
		err = invoke(ctx, q.handler, event)
	}
	if err != nil {
		err = q.report(event, err)
	}
	if obs != nil {
		b.observeHandled(ctx, HandlerResult{Handler: q.sub.name, EventType: q.typeOf(event), Async: true, Latency: b.cfg.clock.Since(start), Err: err})
	}
}

// report hands an asynchronous failure, which has no caller to return to,
// to the dead-letter callback, or to the logger when there is none.
func (q *queue[E]) report(event E, err error) *HandlerError {
	b := q.sub.bus
	herr := &HandlerError{Handler: q.sub.name, EventType: q.typeOf(event), Event: event, Err: err}
	if b.cfg.deadLetter != nil {
		b.deadLetter(b.workCtx, herr)
	} else {
		b.cfg.logger.LogAttrs(b.workCtx, slogError, "bus: asynchronous handler failed", append(handlerAttrs(herr), errorAttrs(err)...)...)
	}
	return herr
}

func (q *queue[E]) typeOf(event E) string {
	if q.eventType != "" {
		return q.eventType
	}
	return reflect.TypeOf(any(event)).String()
}

func (q *queue[E]) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	q.wake.Broadcast()
	if q.space != nil {
		close(q.space)
		q.space = nil
	}
}

func (q *queue[E]) abandon() int {
	q.mu.Lock()
	q.abandoned = true
	q.wake.Broadcast()
	held := 0
	for _, w := range q.workers {
		held += int(w.unclaimed.Swap(0))
	}
	var left []E
	if q.key == nil {
		left = q.fifo.popInto(nil, q.fifo.len())
	} else {
		// Every key with queued events, whether ready or on a worker; the
		// workers report the rest of the batches they hold themselves.
		for _, kq := range q.keys {
			left = append(left, kq.events...)
			clear(kq.events)
			kq.events = kq.events[:0]
		}
	}
	q.pending = 0
	q.mu.Unlock()
	for _, event := range left {
		q.report(event, ErrAbandoned)
	}
	return held + len(left)
}

func (q *queue[E]) done() <-chan struct{} { return q.exited }

const slogError = slog.LevelError

func handlerAttrs(herr *HandlerError) []slog.Attr {
	return []slog.Attr{slog.String("handler", herr.Handler), slog.String("event", herr.EventType)}
}
