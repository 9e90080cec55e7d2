package bus

import (
	"context"
	"time"
)

// Observer receives what a metrics library needs to count and time the bus,
// so that the bus imports none. Its methods run on the publishing or worker
// goroutine, synchronously: keep them fast and safe for concurrent use.
//
// A panic in a method is recovered and logged at Error level by the bus's
// logger (see WithLogger) as "bus: observer panicked": it never reaches the
// publisher or a worker, and never changes what is reported about the
// handlers, whose errors Publish still returns.
type Observer interface {
	// Published is called once for each event Publish accepts, before any
	// handler runs. eventType is its Go type, such as "order.Placed".
	Published(ctx context.Context, eventType string)
	// Handled is called after each handler call, synchronous or
	// asynchronous, successful (r.Err == nil) or failed.
	Handled(ctx context.Context, r HandlerResult)
}

// HandlerResult describes one handler call for an Observer.
type HandlerResult struct {
	// Handler is the subscription's name.
	Handler string
	// EventType is the event's Go type.
	EventType string
	// Async is true for an asynchronous subscription.
	Async bool
	// Latency is how long the call took, middleware included, by the bus's
	// clock; for an asynchronous subscription it excludes the time queued.
	Latency time.Duration
	// Err is the call's error, a *HandlerError; nil on success.
	Err error
}

func (b *Bus) observePublished(ctx context.Context, eventType string) {
	defer b.recoverCallback(ctx, "observer", "", eventType)
	b.cfg.observer.Published(ctx, eventType)
}

func (b *Bus) observeHandled(ctx context.Context, r HandlerResult) {
	defer b.recoverCallback(ctx, "observer", r.Handler, r.EventType)
	b.cfg.observer.Handled(ctx, r)
}
