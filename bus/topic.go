package bus

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
)

// Topic publishes events of one type E on a bus, for a publisher on a hot
// path: it keeps the route of E (which subscriptions take it) from one
// publish to the next, where PublishEvent looks it up in the bus's route
// map every time, and calls plain subscribers straight from a typed list.
// A Topic follows Subscribe, Unsubscribe and Close: each replaces the
// bus's routing snapshot, and a Topic looks its route up again, once, the
// first time it publishes after one. Get one with TopicOf; it is safe for
// concurrent use, and costs nothing to keep.
type Topic[E any] struct {
	b   *Bus
	t   reflect.Type
	key uintptr
	// last is the route of E in one routing snapshot, valid while that
	// snapshot is the bus's.
	last atomic.Pointer[topicRoute[E]]
}

// topicRoute is a Topic's route as of one routing snapshot.
type topicRoute[E any] struct {
	routing *routing
	rt      *route
	// direct holds each subscription's func(context.Context, E) error
	// when every one has it (synchronous without middleware, or an
	// asynchronous enqueue) and the bus has no observer: nothing then
	// happens around the calls until one fails or panics. Nil otherwise.
	direct []func(context.Context, E) error
}

// TopicOf returns the Topic of event type E on b.
func TopicOf[E any](b *Bus) *Topic[E] {
	t := reflect.TypeFor[E]()
	return &Topic[E]{b: b, t: t, key: typeKey(t)}
}

// Publish delivers event as PublishEvent does, with the same guarantees:
// every handler runs even when another fails, the error joins one
// *HandlerError per failed handler, a panic becomes a *PanicError,
// middleware, the dead-letter callback and the observer see what they see
// through Publish, and after Close it returns ErrClosed. Once the route
// is known it allocates nothing and reads no map.
func (tp *Topic[E]) Publish(ctx context.Context, event E) error {
	r := tp.b.routing.Load()
	if r.closed {
		return ErrClosed
	}
	last := tp.last.Load()
	if last == nil || last.routing != r {
		last = tp.lookUp(r)
	}
	switch {
	case last.direct != nil:
		return tp.callDirect(ctx, last, event)
	case last.rt.dynamic:
		return tp.b.Publish(ctx, any(event))
	default:
		return errors.Join(deliver(ctx, tp.b, last.rt, event, nil)...)
	}
}

// callDirect calls each subscription's typed func in turn. At the first
// failure or panic it hands over to deliver's path, which names that
// handler's error (settle) and calls the rest as Publish would.
func (tp *Topic[E]) callDirect(ctx context.Context, last *topicRoute[E], event E) (err error) {
	i := 0
	returned := false
	defer func() {
		// Calling recover costs even when nothing panicked; a normal
		// return skips it.
		if returned {
			return
		}
		if v := recover(); v != nil {
			err = tp.carryOn(ctx, last.rt, event, i, newPanicError(v))
		}
	}()
	for ; i < len(last.direct); i++ {
		if ferr := last.direct[i](ctx, event); ferr != nil {
			returned = true
			return tp.carryOn(ctx, last.rt, event, i, ferr)
		}
	}
	returned = true
	return nil
}

// carryOn settles subscription i's failure and delivers to those after it.
func (tp *Topic[E]) carryOn(ctx context.Context, rt *route, event E, i int, failure error) error {
	errs := settle(ctx, tp.b, rt.subs[i], rt.eventType, event, failure, tp.b.cfg.clock.Now(), nil)
	for j := i + 1; j < len(rt.subs); {
		j, errs = deliverFrom(ctx, tp.b, rt, event, j, errs)
	}
	return errors.Join(errs...)
}

// lookUp finds E's route in r, or computes it (which replaces the bus's
// snapshot), and keeps it for the publishes while its snapshot is current.
func (tp *Topic[E]) lookUp(r *routing) *topicRoute[E] {
	rt := r.routes[tp.key]
	if rt == nil {
		rt = tp.b.routeFor(tp.t)
		// The snapshot routeFor stored holds rt, unless a subscription
		// replaced it since: then rt serves this publish alone.
		if r = tp.b.routing.Load(); r.routes[tp.key] != rt {
			r = nil
		}
	}
	last := &topicRoute[E]{routing: r, rt: rt}
	if tp.b.cfg.observer == nil && !rt.dynamic {
		direct := make([]func(context.Context, E) error, 0, len(rt.subs))
		for _, s := range rt.subs {
			f, ok := s.direct.(func(context.Context, E) error)
			if !ok {
				direct = nil
				break
			}
			direct = append(direct, f)
		}
		last.direct = direct
	}
	if r != nil {
		tp.last.Store(last)
	}
	return last
}
