package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"
)

// Publish delivers events, in the order given, to every subscription whose
// type they match. Synchronous handlers run on the caller's goroutine in
// subscription order; asynchronous subscriptions get the event enqueued,
// waiting for room while their queue is full (see Async).
//
// Every handler runs even when another fails. The returned error joins one
// *HandlerError per failed handler (and per enqueue that ctx cut short),
// each naming its handler; a panicking handler's error wraps a *PanicError.
// Publish returns ErrClosed after Close, and reports a nil event with
// ErrNilEvent without stopping the others.
//
// Publish boxes each event in an interface; PublishEvent does not.
func (b *Bus) Publish(ctx context.Context, events ...any) error {
	r := b.routing.Load()
	if r.closed {
		return ErrClosed
	}
	var errs []error
	for i, ev := range events {
		if ev == nil {
			errs = append(errs, fmt.Errorf("bus: publishing event %d of %d: %w", i+1, len(events), ErrNilEvent))
			continue
		}
		t := reflect.TypeOf(ev)
		rt := r.routes[typeKey(t)]
		if rt == nil {
			rt = b.routeFor(t)
		}
		errs = deliver(ctx, b, rt, ev, errs)
	}
	return errors.Join(errs...)
}

// PublishEvent is Publish for one event of a static type, and the bus's hot
// path: when E is a concrete type, synchronous subscribers to exactly E
// without middleware are called directly, with no allocation and no
// reflection (subscribers to an interface E implements, and those with
// middleware, get the event boxed). The semantics are Publish's.
func PublishEvent[E any](ctx context.Context, b *Bus, event E) error {
	r := b.routing.Load()
	if r.closed {
		return ErrClosed
	}
	t := reflect.TypeFor[E]()
	rt := r.routes[typeKey(t)]
	if rt == nil {
		rt = b.routeFor(t)
	}
	if rt.dynamic {
		// E is an interface type: route by the type it holds. Converting an
		// interface to any does not allocate.
		return b.Publish(ctx, any(event))
	}
	return errors.Join(deliver(ctx, b, rt, event, nil)...)
}

// deliver hands event to each subscription of its route, appending their
// failures to errs. Publish calls it with E = any: subscribers then get the
// event through their boxed path, unless they subscribed to any itself.
func deliver[E any](ctx context.Context, b *Bus, rt *route, event E, errs []error) []error {
	if b.cfg.observer != nil {
		b.observePublished(ctx, rt.eventType)
	}
	for i := 0; i < len(rt.subs); {
		i, errs = deliverFrom(ctx, b, rt, event, i, errs)
	}
	return errs
}

// deliverFrom calls the subscriptions from index from on. When one panics,
// it records the panic as that handler's error and returns the index after
// it, for deliver to carry on: one deferred recover guards the whole loop,
// where one per handler would cost a recover call each.
func deliverFrom[E any](ctx context.Context, b *Bus, rt *route, event E, from int, failures []error) (next int, errs []error) {
	errs = failures
	i := from
	var start time.Time
	returned := false
	defer func() {
		// Calling recover costs even when nothing panicked; a normal return
		// skips it.
		if returned {
			return
		}
		if v := recover(); v != nil {
			errs = settle(ctx, b, rt.subs[i], rt.eventType, event, newPanicError(v), start, errs)
			next = i + 1
		}
	}()
	for ; i < len(rt.subs); i++ {
		s := rt.subs[i]
		if b.cfg.observer != nil {
			start = b.cfg.clock.Now()
		}
		var err error
		if direct, ok := s.direct.(func(context.Context, E) error); ok {
			err = direct(ctx, event)
		} else {
			err = s.handle(ctx, any(event))
		}
		if err != nil || b.cfg.observer != nil {
			errs = settle(ctx, b, s, rt.eventType, event, err, start, errs)
		}
	}
	returned = true
	return i, errs
}

// settle records one synchronous call's outcome: a failure is named after
// its handler, appended to errs and, for a handler's own failure, handed to
// the dead-letter callback (an asynchronous subscription's failure here is
// its enqueue failing, which only the publisher needs to know about); the
// observer hears of handler calls.
func settle[E any](ctx context.Context, b *Bus, s *subscription, eventType string, event E, err error, start time.Time, errs []error) []error {
	if err != nil {
		herr := &HandlerError{Handler: s.name, EventType: eventType, Event: event, Err: err}
		if !s.async {
			b.deadLetter(ctx, herr)
		}
		errs = append(errs, herr)
		err = herr
	}
	if b.cfg.observer != nil && !s.async {
		b.observeHandled(ctx, HandlerResult{Handler: s.name, EventType: eventType, Latency: b.cfg.clock.Since(start), Err: err})
	}
	return errs
}

// invoke calls a typed handler, turning its panic into a *PanicError.
func invoke[E any](ctx context.Context, h func(context.Context, E) error, event E) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = newPanicError(v)
		}
	}()
	return h(ctx, event)
}

// invokeAny is invoke for a boxed event; it also catches a middleware panic.
func invokeAny(ctx context.Context, h Handler, event any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = newPanicError(v)
		}
	}()
	return h(ctx, event)
}

// deadLetter hands a final handler failure to the dead-letter callback.
func (b *Bus) deadLetter(ctx context.Context, herr *HandlerError) {
	if b.cfg.deadLetter == nil {
		return
	}
	defer b.recoverCallback(ctx, "dead-letter callback", herr.Handler, herr.EventType)
	b.cfg.deadLetter(ctx, herr)
}

// recoverCallback, deferred around a call to the user's dead-letter
// callback or observer, logs a panic there rather than let it take down a
// publisher or a worker, or pass for the failure of the handler being
// reported (deliverFrom's recover would blame the handler).
func (b *Bus) recoverCallback(ctx context.Context, callback, handler, eventType string) {
	if v := recover(); v != nil {
		attrs := errorAttrs(newPanicError(v))
		if handler != "" {
			attrs = append(attrs, slog.String("handler", handler))
		}
		attrs = append(attrs, slog.String("event", eventType))
		b.cfg.logger.LogAttrs(ctx, slogError, "bus: "+callback+" panicked", attrs...)
	}
}
