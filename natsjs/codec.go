package natsjs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/tick"
)

// Encode returns the message a Publisher sends for event under prefix —
// subject, body and Nats-Msg-Id, the layout every consumer of the stream
// relies on — for a publisher of its own to send (the ticker binary's
// outbox relay publishes boundaries and skip reports this way):
//
//	<prefix>.<unit>           a boundary: tick's JSON of the event (tick.Passage's MarshalJSON),
//	                          Nats-Msg-Id its ID, "minute/2026-11-26T12:01:00Z"
//	<prefix>.skipped.<unit>   a tick.TicksSkipped: its JSON, Nats-Msg-Id
//	                          "skipped/minute/2026-11-26T12:01:00Z..2026-11-26T12:04:00Z"
//
// Its errors wrap ErrInvalidPrefix or ErrUnsupportedEvent.
func Encode(prefix string, event any) (*nats.Msg, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	return encode(prefix, event)
}

// encode turns an event into the message a Publisher sends: its subject
// under prefix, its lossless JSON (tick's own MarshalJSON, whose instants
// keep offsets with seconds) and, as Nats-Msg-Id, its identity — unit and
// boundary for a boundary, so that the server stores it once however
// many times and by whichever replica it is published.
func encode(prefix string, event any) (*nats.Msg, error) {
	var (
		subject, id string
		err         error
	)
	switch e := event.(type) {
	case tick.Event:
		subject, err = boundarySubject(prefix, e.Unit())
		id = e.ID()
	case tick.TicksSkipped:
		subject, err = skippedSubject(prefix, e.Unit)
		id = skippedID(e)
	case nil:
		return nil, fmt.Errorf("%w: nil", ErrUnsupportedEvent)
	default:
		return nil, fmt.Errorf("%w: %T is neither a tick.Event nor a tick.TicksSkipped", ErrUnsupportedEvent, event)
	}
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(event)
	if err != nil {
		return nil, fmt.Errorf("natsjs: encode %s: %w", id, err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, id)
	return msg, nil
}

// skippedID is a skip report's identity: its unit and the boundaries it
// covers, which a ticker re-emitting it reports the same. It is the key
// "ticker run" gives the report in its outbox (and a webhook's
// Idempotency-Key), so the same report has one Nats-Msg-Id whichever of
// the two publishes it: instants in UTC, where RFC 3339 loses nothing.
func skippedID(s tick.TicksSkipped) string {
	return fmt.Sprintf("%s/%s/%s..%s", skippedToken, s.Unit, s.From.UTC().Format(time.RFC3339Nano), s.To.UTC().Format(time.RFC3339Nano))
}
