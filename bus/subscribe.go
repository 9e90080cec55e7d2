package bus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Subscription is a registered handler. Unsubscribe removes it.
type Subscription struct {
	s *subscription
}

// subscription is the non-generic record the bus routes by; what is generic
// about it is captured in the funcs and the queue it holds.
type subscription struct {
	bus       *Bus
	name      string
	eventType reflect.Type
	// direct is a func(context.Context, E) error for the subscription's own E:
	// the handler itself (synchronous, no middleware) or the enqueue
	// (asynchronous). PublishEvent[E] calls it without boxing the event.
	// Nil when the event must go through handle.
	direct any
	// handle takes the event boxed: it runs the middleware chain and the
	// handler, or enqueues.
	handle Handler
	async  bool
	once   sync.Once
}

// SubscribeOption configures one subscription. Options are checked by
// Subscribe, which reports the first invalid one prefixed with
// "bus: Subscribe[E]: ".
type SubscribeOption func(*subConfig) error

type subConfig struct {
	name       string
	middleware []Middleware
	async      bool
	workers    int
	queueSize  int
	key        any // func(E) string, checked against E by Subscribe
}

// Name names the subscription in errors, logs and observer calls. The
// default is the handler's function name ("order.(*Service).onPaid"), or
// "<event type>#<n>" for a function literal.
func Name(name string) SubscribeOption {
	return func(c *subConfig) error {
		if strings.TrimSpace(name) == "" {
			return errors.New("Name: name must not be empty")
		}
		c.name = name
		return nil
	}
}

// Use wraps this subscription's handler in mw, inside any bus-wide
// middleware (see WithMiddleware). The first one given is the outermost.
func Use(mw ...Middleware) SubscribeOption {
	return func(c *subConfig) error {
		for i, m := range mw {
			if m == nil {
				return fmt.Errorf("Use: middleware %d is nil", i)
			}
		}
		c.middleware = append(c.middleware, mw...)
		return nil
	}
}

// Async makes the subscription asynchronous: Publish only enqueues the event
// in a queue of queueSize events, and workers goroutines run the handler.
// When the queue is full, Publish waits for room (or for its context to end);
// it never drops an event. Without KeyBy, workers take events in publish
// order but run them in parallel, so only Async(1, n) keeps them in order.
func Async(workers, queueSize int) SubscribeOption {
	return func(c *subConfig) error {
		if workers < 1 {
			return fmt.Errorf("Async: workers must be at least 1, got %d", workers)
		}
		if queueSize < 1 {
			return fmt.Errorf("Async: queue size must be at least 1, got %d", queueSize)
		}
		c.async, c.workers, c.queueSize = true, workers, queueSize
		return nil
	}
}

// KeyBy gives an asynchronous subscription per-key order: events with the
// same key run one at a time, in publish order, never on two goroutines at
// once, while events with different keys run in parallel on the shared
// workers. key runs on the publisher's goroutine. It needs Async, and E must
// be the subscription's event type.
func KeyBy[E any](key func(event E) string) SubscribeOption {
	return func(c *subConfig) error {
		if key == nil {
			return errors.New("KeyBy: key function must not be nil")
		}
		c.key = key
		return nil
	}
}

// Subscribe registers handler for every published event whose type is E or,
// when E is an interface type, implements E. Synchronous handlers run on the
// publisher's goroutine in subscription order; see Async for the others.
func Subscribe[E any](b *Bus, handler func(ctx context.Context, event E) error, opts ...SubscribeOption) (*Subscription, error) {
	t := reflect.TypeFor[E]()
	if b == nil {
		return nil, fmt.Errorf("bus: Subscribe[%s]: bus is nil", t)
	}
	if handler == nil {
		return nil, fmt.Errorf("bus: Subscribe[%s]: handler is nil", t)
	}
	var sc subConfig
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("bus: Subscribe[%s]: nil option", t)
		}
		if err := opt(&sc); err != nil {
			return nil, fmt.Errorf("bus: Subscribe[%s]: %w", t, err)
		}
	}
	var key func(E) string
	if sc.key != nil {
		var ok bool
		if key, ok = sc.key.(func(E) string); !ok {
			return nil, fmt.Errorf("bus: Subscribe[%s]: KeyBy takes a %s, not a %s", t, reflect.TypeOf(sc.key).In(0), t)
		}
		if !sc.async {
			return nil, fmt.Errorf("bus: Subscribe[%s]: KeyBy needs Async", t)
		}
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.routing.Load()
	if cur.closed {
		return nil, ErrClosed
	}
	b.nextID++
	s := &subscription{bus: b, name: sc.name, eventType: t, async: sc.async}
	if s.name == "" {
		s.name = defaultName(handler, t, b.nextID)
	}

	var chain Handler
	if mws := slices.Concat(b.cfg.middleware, sc.middleware); len(mws) > 0 {
		chain = buildChain(s, mws, func(ctx context.Context, event any) error {
			return invoke(ctx, handler, event.(E))
		})
	}
	switch {
	case sc.async:
		q := newQueue(s, handler, chain, key, sc.workers, sc.queueSize)
		s.direct = q.push
		s.handle = func(ctx context.Context, event any) error { return q.push(ctx, event.(E)) }
		b.queues[s] = q
	case chain != nil:
		s.handle = chain
	default:
		s.direct = handler
		s.handle = func(ctx context.Context, event any) error { return handler(ctx, event.(E)) }
	}
	b.setSubs(append(slices.Clip(cur.subs), s))
	return &Subscription{s: s}, nil
}

// Name returns the subscription's name, as errors and observers report it.
func (sub *Subscription) Name() string { return sub.s.name }

// Unsubscribe removes the subscription. Publishes that start afterwards do
// not deliver to it; a Publish already running may still deliver once. An
// asynchronous subscription's workers finish what it had queued and exit
// (Close waits for them). Unsubscribe is safe at any time, including from a
// handler during Publish, and calling it again does nothing.
func (sub *Subscription) Unsubscribe() {
	s := sub.s
	s.once.Do(func() {
		b := s.bus
		b.mu.Lock()
		if cur := b.routing.Load(); !cur.closed {
			b.setSubs(slices.DeleteFunc(slices.Clone(cur.subs), func(o *subscription) bool { return o == s }))
		}
		q := b.queues[s]
		b.mu.Unlock()
		if q != nil {
			q.close()
		}
	})
}

// defaultName names a subscription after its handler function, trimmed to
// "package.Func", or after its event type and sequence number when the
// handler is a function literal, whose generated name says nothing.
func defaultName(handler any, t reflect.Type, n uint64) string {
	name := ""
	if fn := runtime.FuncForPC(reflect.ValueOf(handler).Pointer()); fn != nil {
		name = fn.Name()
	}
	name = strings.TrimSuffix(name[strings.LastIndex(name, "/")+1:], "-fm")
	if name == "" || strings.Contains(name, ".func") {
		return fmt.Sprintf("%s#%d", t, n)
	}
	return name
}
