// Package sink delivers passage-of-time events, and the runs of the
// schedules the ticker fires ([RunRecord], [SlotsSkippedRecord]), out of
// the ticker process: as JSON lines on a writer, or as signed HTTP POSTs
// to webhooks.
//
// Every sink implements the ticker's Publisher contract (Publish(ctx,
// events...) error). A sink that cannot deliver returns an error; the ticker
// then keeps its cursor where it was and offers the same events again, so a
// receiver that is down for a while gets every event, in order, once it is
// back. A [Fanout] over the sinks keeps the ones that did take an event from
// getting it twice.
//
// # Webhook requests
//
// Each event is one POST with a JSON body (see [Record]) and these headers:
//
//	Content-Type:       application/json
//	Idempotency-Key:    the record's id: <unit>/<boundary in RFC 3339 UTC>, e.g. day/2026-03-29T00:00:00Z,
//	                    or a schedule run's slot id, e.g. report@2026-03-29T10:00:00Z
//	X-Passage-Event:    the record type, e.g. DayHasPassed or ScheduleRun
//	X-Passage-Signature: sha256=<hex HMAC-SHA256 of the raw body with the shared secret>
//
// A receiver verifies the signature with [Verify] (or the same computation
// in any language) before trusting the body, and deduplicates by
// Idempotency-Key: delivery is at least once.
package sink
