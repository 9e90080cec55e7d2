package natsjs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/tick"
)

// Encode returns the message a Publisher sends for event under prefix —
// subject, body and headers, the layout every consumer of the stream
// relies on — for a publisher of its own to send (the ticker binary's
// outbox relay publishes boundaries and skip reports this way):
//
//	<prefix>.<unit>           a boundary: ce-type its tick event's name (MinuteHasPassed),
//	                          Nats-Msg-Id and ce-id its ID, "minute/2026-11-26T12:01:00Z"
//	<prefix>.skipped.<unit>   a tick.TicksSkipped: ce-type TicksSkipped, Nats-Msg-Id and ce-id
//	                          "skipped/minute/2026-11-26T12:01:00Z..2026-11-26T12:04:00Z"
//
// Each is a CloudEvent in the binding's binary content mode (see
// CloudEvent): the body is the event's data, JSON with snake_case fields
// (a boundary's unit, boundary, previous, emitted_at, catch_up; a skip
// report's unit, from, to, count, policy, emitted_at), its instants
// lossless as tick.JSONTime writes them; the attributes are ce- headers,
// ce-source SourceTick, ce-subject the unit, ce-time the boundary (the
// last skipped one for a report). docs/events.md and docs/schemas give
// the shape. Its errors wrap ErrInvalidPrefix or ErrUnsupportedEvent.
func Encode(prefix string, event any) (*nats.Msg, error) {
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	return encode(prefix, event)
}

// boundaryData is a boundary's data: what tick.Passage holds, snake_case,
// with its unit. Previous is null for an event built without a ticker
// (a Consumer refuses those: a ticker always has a previous boundary).
type boundaryData struct {
	Unit      tick.Unit      `json:"unit"`
	Boundary  tick.JSONTime  `json:"boundary"`
	Previous  *tick.JSONTime `json:"previous"`
	EmittedAt tick.JSONTime  `json:"emitted_at"`
	CatchUp   bool           `json:"catch_up"`
}

// skippedData is a skip report's data.
type skippedData struct {
	Unit      tick.Unit     `json:"unit"`
	From      tick.JSONTime `json:"from"`
	To        tick.JSONTime `json:"to"`
	Count     int64         `json:"count"`
	Policy    string        `json:"policy"`
	EmittedAt tick.JSONTime `json:"emitted_at"`
}

// encode turns an event into the message a Publisher sends: its subject
// under prefix, its data's lossless JSON and, as Nats-Msg-Id and ce-id,
// its identity — unit and boundary for a boundary, so that the server
// stores it once however many times and by whichever replica it is
// published.
func encode(prefix string, event any) (*nats.Msg, error) {
	var (
		subject string
		ce      CloudEvent
		data    any
		err     error
	)
	switch e := event.(type) {
	case tick.Event:
		p, ok := tick.PassageOf(e)
		if !ok {
			return nil, fmt.Errorf("%w: %T carries no tick.Passage", ErrUnsupportedEvent, event)
		}
		subject, err = boundarySubject(prefix, e.Unit())
		ce = CloudEvent{ID: e.ID(), Source: SourceTick, Type: reflect.TypeOf(e).Name(), Subject: string(e.Unit()), Time: p.At}
		data = boundaryData{Unit: e.Unit(), Boundary: tick.JSONTime{Time: p.At}, Previous: tick.JSONTimeOf(p.Since), EmittedAt: tick.JSONTime{Time: p.EmittedAt}, CatchUp: p.CatchUp}
	case tick.TicksSkipped:
		subject, err = skippedSubject(prefix, e.Unit)
		ce = CloudEvent{ID: SkippedID(e), Source: SourceTick, Type: TypeTicksSkipped, Subject: string(e.Unit), Time: e.To}
		data = skippedData{Unit: e.Unit, From: tick.JSONTime{Time: e.From}, To: tick.JSONTime{Time: e.To}, Count: e.Count, Policy: e.Policy, EmittedAt: tick.JSONTime{Time: e.EmittedAt}}
	case nil:
		return nil, fmt.Errorf("%w: nil", ErrUnsupportedEvent)
	default:
		return nil, fmt.Errorf("%w: %T is neither a tick.Event nor a tick.TicksSkipped", ErrUnsupportedEvent, event)
	}
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("natsjs: encode %s: %w", ce.ID, err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, MsgID(ce.ID))
	ce.SetHeaders(msg.Header)
	return msg, nil
}

// SkippedID is a skip report's identity, its Nats-Msg-Id and ce-id:
// skipped/<unit>/<from>..<to>, its unit and the boundaries it covers,
// which a ticker re-emitting it reports the same. It is the key "ticker
// run" gives the report in its outbox (and a webhook's Idempotency-Key),
// so the same report has one Nats-Msg-Id whichever of the two publishes
// it: instants in UTC, where RFC 3339 loses nothing.
func SkippedID(s tick.TicksSkipped) string {
	return fmt.Sprintf("%s/%s/%s..%s", skippedToken, s.Unit, s.From.UTC().Format(time.RFC3339Nano), s.To.UTC().Format(time.RFC3339Nano))
}
