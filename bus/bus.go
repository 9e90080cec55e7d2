package bus

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
)

// Bus delivers published events to the subscriptions whose event type they
// match. A Bus is safe for concurrent use; its zero value is not usable, so
// create one with New.
type Bus struct {
	cfg config

	// routing is an immutable snapshot read without locks by every Publish;
	// Subscribe, Unsubscribe, Close and the first publish of a new event type
	// replace it under mu.
	routing atomic.Pointer[routing]
	mu      sync.Mutex
	nextID  uint64
	queues  map[*subscription]drainer

	// workCtx is the context asynchronous handlers run with; Close cancels
	// it only when its own context ends before the queues drain.
	workCtx    context.Context
	cancelWork context.CancelFunc
}

// routing is what a publish needs: the subscriptions in subscription order,
// and the cache of which of them take each event type, so that matching an
// event to its subscribers costs one map read and no reflection.
type routing struct {
	subs   []*subscription
	routes map[uintptr]*route
	closed bool
}

// route lists, for one event type, the subscriptions it is delivered to.
type route struct {
	eventType string
	subs      []*subscription
	// dynamic marks an interface type seen by PublishEvent: such an event is
	// routed by the concrete type it holds.
	dynamic bool
}

// drainer is the non-generic face of an asynchronous queue.
type drainer interface {
	// close stops the queue from accepting events; its workers drain what
	// is queued and exit.
	close()
	// abandon makes the workers start no more events; each event left is
	// reported with ErrAbandoned, and abandon returns how many there were.
	abandon() int
	// done is closed once every worker has exited.
	done() <-chan struct{}
}

// New returns a Bus configured by opts, or the first option's error.
func New(opts ...Option) (*Bus, error) {
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("bus: New: nil option")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	b := &Bus{cfg: cfg, queues: make(map[*subscription]drainer)}
	b.workCtx, b.cancelWork = context.WithCancel(context.Background())
	b.routing.Store(&routing{routes: map[uintptr]*route{}})
	return b, nil
}

// Close stops the bus from accepting events and subscriptions, and waits
// until every asynchronous subscription has handled what it had queued.
//
// If ctx ends first, Close cancels the context the asynchronous handlers run
// with, stops them from starting on further events, reports each event left
// unhandled to the dead-letter callback (or logger) with ErrAbandoned, and
// returns an error wrapping ctx.Err() that says how many were left. Close may
// be called more than once; later calls wait for the same drain. An
// asynchronous handler must not call Close: it would wait for itself.
func (b *Bus) Close(ctx context.Context) error {
	b.mu.Lock()
	if r := b.routing.Load(); !r.closed {
		b.routing.Store(&routing{routes: map[uintptr]*route{}, closed: true})
	}
	queues := make([]drainer, 0, len(b.queues))
	for _, q := range b.queues {
		queues = append(queues, q)
	}
	b.mu.Unlock()

	for _, q := range queues {
		q.close()
	}
	for i, q := range queues {
		select {
		case <-q.done():
		case <-ctx.Done():
			b.cancelWork()
			left := 0
			for _, q := range queues[i:] {
				left += q.abandon()
			}
			return fmt.Errorf("bus: Close: %w before asynchronous handlers drained (%d events not started were abandoned, each reported as ErrAbandoned)", ctx.Err(), left)
		}
	}
	b.cancelWork()
	return nil
}

// routeFor returns the route for event type t, computing and caching it on
// first use.
func (b *Bus) routeFor(t reflect.Type) *route {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.routing.Load()
	if rt, ok := cur.routes[typeKey(t)]; ok {
		return rt
	}
	rt := newRoute(t, cur.subs)
	next := &routing{subs: cur.subs, routes: maps.Clone(cur.routes), closed: cur.closed}
	next.routes[typeKey(t)] = rt
	b.routing.Store(next)
	return rt
}

// typeKey identifies a type by the address of its descriptor, which is
// unique and never moves or dies: a map keyed by it hashes one word, where
// one keyed by reflect.Type hashes an interface, which doubled the cost of a
// publish. Reading the address out of the interface with unsafe saves about
// a tenth of a one-handler publish; not worth depending on the interface's
// layout.
func typeKey(t reflect.Type) uintptr {
	return reflect.ValueOf(t).Pointer()
}

func newRoute(t reflect.Type, subs []*subscription) *route {
	rt := &route{eventType: t.String()}
	if t.Kind() == reflect.Interface {
		rt.dynamic = true
		return rt
	}
	for _, s := range subs {
		if s.eventType == t || (s.eventType.Kind() == reflect.Interface && t.Implements(s.eventType)) {
			rt.subs = append(rt.subs, s)
		}
	}
	return rt
}

// setSubs replaces the subscription list, dropping the route cache, which
// is rebuilt lazily by the next publishes. Callers hold b.mu.
func (b *Bus) setSubs(subs []*subscription) {
	b.routing.Store(&routing{subs: subs, routes: map[uintptr]*route{}})
}
