package sink

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/natsjs"
)

// Event is a record as it leaves the ticker, whatever the sink: a
// CloudEvents 1.0 event in the JSON event format (docs/events.md, and a
// JSON Schema per type in docs/schemas). stdout and webhooks carry it
// whole (the structured content mode); NATS carries Data as the body and
// the other members as ce- headers (the binary content mode). Every
// member of Data is snake_case.
type Event struct {
	// SpecVersion is natsjs.SpecVersion, "1.0".
	SpecVersion string `json:"specversion"`
	// ID is the record's key: <unit>/<boundary> for a boundary, a slot
	// id for a run, skipped/… and slots-skipped/… for skip reports. It
	// is the webhook-id, Idempotency-Key and Nats-Msg-Id: a receiver
	// deduplicates by it.
	ID string `json:"id"`
	// Source is natsjs.SourceTick for the passage of time and
	// natsjs.SourceSchedule for a schedule's records.
	Source string `json:"source"`
	// Type is MinuteHasPassed … YearHasPassed, TicksSkipped, ScheduleRun
	// or SlotsSkipped.
	Type string `json:"type"`
	// Subject is the stream the record is delivered in order in: the
	// unit of time, or the schedule's name.
	Subject string `json:"subject"`
	// Time is the instant the record is about, in UTC (natsjs.FormatTime):
	// the boundary, the slot, the last skipped boundary or slot.
	Time string `json:"time"`
	// DataContentType is natsjs.DataContentType, application/json.
	DataContentType string `json:"datacontenttype"`
	// Data is the record's fields (see Record, RunRecord,
	// SlotsSkippedRecord).
	Data json.RawMessage `json:"data"`
}

// marshalEvent writes the envelope of a record whose data is data.
func marshalEvent(id, source, typ, subject string, at time.Time, data any) ([]byte, error) {
	d, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("sink: encode the data of %s: %w", id, err)
	}
	return json.Marshal(Event{
		SpecVersion: natsjs.SpecVersion, ID: id, Source: source, Type: typ, Subject: subject,
		Time: natsjs.FormatTime(at), DataContentType: natsjs.DataContentType, Data: d,
	})
}

// readEvent reads an envelope. ok is false when body is a JSON object
// without "specversion": a record in the shape before the envelope.
func readEvent(body []byte) (ev Event, ok bool, err error) {
	var v struct {
		Event
		SpecVersion *string `json:"specversion"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return Event{}, false, err
	}
	if v.SpecVersion == nil {
		return Event{}, false, nil
	}
	v.Event.SpecVersion = *v.SpecVersion
	if v.Event.SpecVersion != natsjs.SpecVersion {
		return Event{}, true, fmt.Errorf("specversion %q, not %s", v.Event.SpecVersion, natsjs.SpecVersion)
	}
	return v.Event, true, nil
}

// envelopeOf returns the envelope of a stored record: body itself, or,
// for a record an older ticker stored in the outbox before the envelope
// (a flat object with "type" and "id" beside the fields), the envelope
// of the same record, so that every sink sends one shape whatever the
// outbox holds. The conversion is deterministic: a record delivered
// again is the same bytes.
func envelopeOf(typ string, body []byte) ([]byte, error) {
	_, ok, err := readEvent(body)
	switch {
	case err != nil:
		return nil, fmt.Errorf("a %s record whose body is not an event: %w", typ, err)
	case ok:
		return body, nil
	}
	var v interface {
		json.Marshaler
		json.Unmarshaler
	}
	switch typ {
	case TypeScheduleRun:
		v = new(RunRecord)
	case TypeSlotsSkipped:
		v = new(SlotsSkippedRecord)
	default:
		v = new(Record)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("a %s record stored before the envelope: %w", typ, err)
	}
	return json.Marshal(v)
}
