// Package natsjs carries passage's time across services on NATS
// JetStream: one ticker publishes the passage of time to a stream, and
// every service that reacts to it reads the stream instead of running a
// ticker of its own.
//
// # When to use it
//
// A ticker per service is simplest while the services are few: each keeps
// its own cursor and lease in its own database, and nothing lies between
// the clock and its handlers. Use this package when time should have one
// source — one place that decides what a minute is, in which zone, with
// which catch-up policy — and many listeners, or when services share no
// database that a ticker's lease could live in. JetStream then gives each
// listener its own durable position in the stream of boundaries, which
// survives restarts of the listener, of the ticker and of the server.
//
// # Time on a stream
//
// [EnsureStream] creates (or checks) a stream storing every subject under
// a prefix, with a duplicate window at least the ticker's lease TTL.
// [NewPublisher] returns a tick.Publisher, to hand to tick.New in place
// of a bus: each boundary goes to <prefix>.<unit> (passage.time.minute,
// passage.time.hour, …) as the event's lossless JSON, with Nats-Msg-Id
// its identity, unit and boundary ("minute/2026-11-26T12:01:00Z"), and
// Publish returns only once the server has stored it. The ticker's cursor
// therefore moves only past stored boundaries, and a boundary published
// twice — by a replica taking the lease over, or a retry after a lost ack
// — is stored once. Skip reports go to <prefix>.skipped.<unit>.
//
// The broker is an edge adapter: tick, bus, todolist and the rest never
// import NATS; this package depends on them, not the other way round.
package natsjs
