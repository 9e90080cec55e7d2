// Package sink is where passage-of-time events, and the runs of the
// schedules the ticker fires ([RunRecord], [SlotsSkippedRecord]), leave the
// ticker process: as JSON lines on a writer, or as signed HTTP POSTs to
// webhooks.
//
// [Marshal] turns what the ticker and the scheduler decided into a
// record's JSON body and envelope (type and id). "ticker run" stores
// that body in the outbox, in the transaction that decided it, and the
// outbox's relays deliver the stored body after the commit, one relay per
// sink, through [JSONLines.Send] and [Webhook.Send]: one write or one
// request per delivery, with no retry of their own. The relay retries a
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
package sink
