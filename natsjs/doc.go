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
// of a bus, that publishes each event and returns only once the server
// has stored it. The ticker's cursor therefore moves only past stored
// boundaries, and a boundary published twice — by a replica taking the
// lease over, or a retry after a lost ack — is stored once.
//
// # The layout
//
// This package owns the layout of time on a stream; [Encode] gives it to
// publishers of their own, and [EncodeRecord] to a publisher of events
// already written as CloudEvents (the ticker binary's "ticker run
// --nats" publishes its outbox's records through it), so a [Consumer]
// reads either. Each event is a
// CloudEvent ([CloudEvent], docs/events.md) in the binary content mode
// of the CloudEvents NATS binding: its data, snake_case JSON, is the
// body; its attributes are ce- headers:
//
//	subject                  body (data)                                     ce-type / Nats-Msg-Id and ce-id
//	<prefix>.<unit>          unit, boundary, previous, emitted_at, catch_up  MinuteHasPassed… / minute/2026-11-26T12:01:00Z
//	<prefix>.skipped.<unit>  unit, from, to, count, policy, emitted_at       TicksSkipped / skipped/<unit>/<from>..<to>, in UTC
//
// with <unit> minute, hour, day, week, month, quarter or year
// (passage.time.minute, passage.time.skipped.hour, …), ce-source
// SourceTick, ce-subject the unit, ce-time the boundary (a report's last
// skipped one), and the instants of data lossless: offsets with seconds.
// The IDs are the keys "ticker run" stores the records under in its
// outbox and sends a webhook as webhook-id ([SkippedID] makes a
// report's). Subjects of more tokens under the prefix are not time and a
// Consumer acks them unread: [EncodeRecord] puts a stored schedule's
// runs on <prefix>.schedule.<name> and its skipped slots on
// <prefix>.schedule.<name>.skipped, in the same stream. [CheckPrefix] is
// the one check of a prefix, [StreamName] the stream a prefix's events
// go to unless told otherwise, [MsgID] the Nats-Msg-Id of an event's id. A Consumer also reads, through the next release, the
// shape publishers wrote before: tick's JSON of the event with no ce-
// header.
//
// # Time from a stream
//
// [NewConsumer] returns a Consumer that reads those subjects through a
// durable JetStream consumer and publishes each event, typed again
// (tick.MinuteHasPassed, …), on the service's local bus, so that
// todolist.Handle[tick.MinuteHasPassed] and every other handler of the
// passage of time work unchanged in a service that runs no ticker. Only
// what is the event its subject names reaches them: a message of an
// unknown unit, with a field missing, a boundary that is none, fields
// that disagree or a Nats-Msg-Id that is not its event's is poison,
// terminated, counted by [PoisonReason] and logged once, bounded. One
// message is in flight at a time, in stream order; it is acked once every
// handler succeeded, delivered again with backoff when one failed, and
// kept while a slow handler runs (in-progress acks every third of the ack
// wait).
//
// Delivery is at least once: a consumer that dies between its handlers'
// success and its ack, or a server that restarts and forgets acks it had
// not stored, delivers the message again. Handlers whose effect must
// happen once are made with [Once]: it runs the handler in a SQL
// transaction (SQLite or PostgreSQL, through an [Inbox]) that first
// records the consumer and the message id, so a redelivery finds the row
// and changes nothing. Level-triggered handlers such as a to-do list's
// need no inbox: a minute handled twice takes the same items.
//
// # Stored events out
//
// [RecordEvents] is an eventstore hook that writes every appended event to
// an outbox in the append's own transaction, keyed "<stream>/<version>";
// an outbox.Relay with an [EventSink]'s Deliver publishes them under
// <prefix>.<type> with that key as Nats-Msg-Id and the stream, version,
// type and append time as headers, each a CloudEvent too (ce-source
// SourceEventStore, ce-subject the stream, the event's JSON the body). The relay reads only what committed,
// from a durable checkpoint, in order per stream, never passing an event
// that commits late with a lower position; a crash between the commit and
// the publish loses nothing (the next relay publishes it), and one between
// the server's ack and the checkpoint publishes again what the server
// then de-duplicates.
//
// The broker is an edge adapter: tick, bus, todolist and the rest never
// import NATS; this package depends on them, not the other way round.
package natsjs
