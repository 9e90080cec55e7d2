// Package sink is where passage-of-time events ([Record]), and the runs
// of the schedules the ticker fires ([RunRecord], [SlotsSkippedRecord]),
// leave the ticker process, each as one CloudEvent: as JSON lines on a
// writer, as signed HTTP POSTs to webhooks, or as messages on a NATS
// JetStream stream.
//
// [Marshal] turns what the ticker and the scheduler decided into a
// record's JSON body — its CloudEvent ([Event], docs/events.md, a JSON
// Schema per type in docs/schemas) — and its type and id. "ticker run"
// stores that body in the outbox, in the transaction that decided it,
// and the outbox's relays deliver the stored body after the commit, one
// relay per sink, through [JSONLines.Send], [Webhook.Send] and
// [NATS.Send]: one write, request or publish per delivery, with no retry
// of their own. The relay retries a refusal with backoff, parks a record
// refused too often, and keeps each stream's records (a unit's
// boundaries, a schedule's runs) in order; different streams are
// delivered in parallel. A body an older ticker stored before the
// envelope leaves every sink as its envelope.
//
// # stdout
//
// Each record is one line: its whole CloudEvent (structured content
// mode).
//
// # Webhook requests
//
// Each record is one POST whose body is its whole CloudEvent, signed as
// Standard Webhooks specifies:
//
//	Content-Type:        application/cloudevents+json; charset=utf-8
//	webhook-id:          the record's id: <unit>/<boundary in RFC 3339 UTC>, e.g. day/2026-03-29T00:00:00Z,
//	                     or a schedule run's slot id, e.g. report@2026-03-29T10:00:00Z
//	webhook-timestamp:   this attempt's unix seconds
//	webhook-signature:   v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>"> (see WebhookKey)
//	Idempotency-Key:     the record's id
//	X-Passage-Event:     the record type (the old header, through the next release)
//	X-Passage-Signature: sha256=<hex HMAC-SHA256 of the body> (the old header, through the next release)
//
// A receiver verifies webhook-signature with a Standard Webhooks library
// (which refuses a request older than its tolerance, five minutes)
// before trusting the body, and deduplicates by webhook-id (the body's
// "id"): delivery is at least once, and a redelivery carries the same
// id and the same body, with its own timestamp and signature.
//
// # NATS messages
//
// Each record is one message on a JetStream stream storing <prefix>.>,
// a CloudEvent in the NATS binding's binary content mode: the body is
// the record's data as stored, the attributes are ce- headers. The
// natsjs package lays every record out (natsjs.EncodeRecord), the passage
// of time as natsjs.Encode does, so that a natsjs.Consumer of the prefix
// turns it back into typed tick events: a boundary on <prefix>.<unit>
// (passage.minute), a skip report on <prefix>.skipped.<unit>. A
// schedule's runs go to <prefix>.schedule.<name> and its skipped slots
// to <prefix>.schedule.<name>.skipped (see [NATSSubject]); a
// natsjs.Consumer passes those by. Every message carries these headers
// besides the ce- ones:
//
//	Nats-Msg-Id:    the record's id, as webhook-id (natsjs.MsgID); for time, natsjs's event id, the same string
//	Passage-Event:  the record type (through the next release)
//
// [NATS.Send] returns once the server acknowledged storing it, and the
// stream de-duplicates by Nats-Msg-Id within its duplicate window: a
// record published again — a lost ack retried, a relay that died between
// the publish and its checkpoint — is stored once. [NewNATS] refuses a
// stream whose window is shorter than the one asked for.
package sink
