// Package sink is where passage-of-time events, and the runs of the
// schedules the ticker fires ([RunRecord], [SlotsSkippedRecord]), leave the
// ticker process: as JSON lines on a writer, as signed HTTP POSTs to
// webhooks, or as messages on a NATS JetStream stream.
//
// [Marshal] turns what the ticker and the scheduler decided into a
// record's JSON body and envelope (type and id). "ticker run" stores
// that body in the outbox, in the transaction that decided it, and the
// outbox's relays deliver the stored body after the commit, one relay per
// sink, through [JSONLines.Send], [Webhook.Send] and [NATS.Send]: one
// write, request or publish per delivery, with no retry of their own. The relay retries a
// refusal with backoff, parks a record refused too often, and keeps each
// stream's records (a unit's boundaries, a schedule's runs) in order;
// different streams are delivered in parallel.
//
// # Webhook requests
//
// Each record is one POST with its JSON body (see [Record]) and these
// headers:
//
//	Content-Type:       application/json
//	Idempotency-Key:    the record's id: <unit>/<boundary in RFC 3339 UTC>, e.g. day/2026-03-29T00:00:00Z,
//	                    or a schedule run's slot id, e.g. report@2026-03-29T10:00:00Z
//	X-Passage-Event:    the record type, e.g. DayHasPassed or ScheduleRun
//	X-Passage-Signature: sha256=<hex HMAC-SHA256 of the raw body with the shared secret>
//
// A receiver verifies the signature with [Verify] (or the same computation
// in any language) before trusting the body, and deduplicates by
// Idempotency-Key (the body's "id"): delivery is at least once, and a
// redelivery carries the same key and the same body.
//
// # NATS messages
//
// Each record is one message on a JetStream stream storing <prefix>.>.
// The passage of time goes out as the natsjs package lays it out
// (natsjs.Encode), so that a natsjs.Consumer of the prefix turns it back
// into typed tick events: a boundary on <prefix>.<unit>
// (passage.minute), a skip report on <prefix>.skipped.<unit>, each with
// tick's JSON of the event, rebuilt from the stored record. A schedule's
// runs go to <prefix>.schedule.<name> and its skipped slots to
// <prefix>.schedule.<name>.skipped with the body a webhook would get
// (see [NATSSubject]); a natsjs.Consumer passes those by. Every message
// carries these headers:
//
//	Nats-Msg-Id:    the record's id, as Idempotency-Key ([NATSMsgID]); for time, natsjs's event id, the same string
//	Passage-Event:  the record type
//
// [NATS.Send] returns once the server acknowledged storing it, and the
// stream de-duplicates by Nats-Msg-Id within its duplicate window: a
// record published again — a lost ack retried, a relay that died between
// the publish and its checkpoint — is stored once. [NewNATS] refuses a
// stream whose window is shorter than the one asked for.
package sink
