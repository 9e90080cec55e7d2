// Package bus is passage's typed in-process event bus: the ticker publishes
// the passage of time on it, to-do list projections and handlers subscribe.
//
// # Subscribing
//
// Subscribe[E] registers a func(ctx, E) error. E is a concrete type or an
// interface: a subscriber to an interface receives every published event
// that implements it, so one handler can take every tick.Event. Matching is
// exact Go typing — a subscriber to Order does not receive *Order. Which
// subscriptions take a given concrete type is worked out once and cached, so
// publishing does no reflection beyond reading the event's type.
//
// # Publishing and order
//
// Publish(ctx, events...) delivers the events in the order given. For each
// event, synchronous handlers (the default) run on the caller's goroutine,
// one after another, in subscription order; Publish returns when they all
// have. PublishEvent[E] does the same for one event without boxing it: to
// subscribers of exactly E without middleware it costs a direct call and no
// allocation. A publisher on a hot path takes TopicOf[E](b) once and calls
// its Publish: the same delivery, with E's route kept between publishes
// (looked up again only after a subscription changes) instead of read from
// the bus's route map each time.
//
// # Errors
//
// Every handler runs even when another fails. Publish returns their errors
// joined with errors.Join, one *HandlerError per failure naming its handler
// (Name, or the handler's function name by default). A panicking handler
// never crashes the publisher: its panic becomes a *PanicError carrying the
// panic value and stack. A final failure — after middleware such as Retry
// gave up — also goes to the WithDeadLetter callback and to the Observer.
// Nothing is swallowed: an asynchronous handler's failure, which has no
// caller to return to, goes to the dead-letter callback, or is logged at
// Error level when there is none.
//
// # Asynchronous subscriptions
//
// With Async(workers, queueSize), Publish only enqueues the event; workers
// goroutines run the handler. A full queue makes Publish wait for room,
// honouring its context; an event is never dropped. With KeyBy, events with
// the same key run one at a time in publish order and never on two
// goroutines at once, while different keys run in parallel on the shared
// workers (an actor runtime's scheduler: a FIFO per key and a ready queue of
// keys). Without KeyBy, the events are taken in order but run in parallel
// unless workers is 1. Asynchronous handlers run with a context of the bus,
// not the publisher's, which may have ended by then; Close cancels it only
// if its own context ends before the queues drain.
//
// Close stops the bus from accepting events and subscriptions and waits
// until every queued event was handled. If its context ends first, the
// events not yet started are reported with ErrAbandoned — counted in Close's
// error, and each handed to the dead-letter callback or the logger.
//
// # Middleware
//
// A Middleware wraps the type-erased Handler. The first given is the
// outermost: WithMiddleware(A) on the bus and Use(B, C) on a subscription
// run A, then B, then C, then the handler. Retry, Timeout and Logging are
// provided, and time themselves by the bus's clock (WithClock); with
// Use(retry, timeout) each attempt has its own deadline, and an attempt that
// ran out of time (ErrTimeout) is retried. HandlerName tells middleware
// which subscription it wraps.
//
// # Observing
//
// An Observer set with WithObserver hears of every published event and every
// handler call with its latency and error, which is what a metrics library
// needs; the bus imports none. A panicking observer or dead-letter callback
// is logged, and changes nothing else.
package bus
