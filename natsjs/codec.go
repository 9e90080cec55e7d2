package natsjs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// errNotTime is decode's answer for a subject under the prefix that
// holds no passage of time: one of more than one token that is not a
// skip report's, such as the schedule runs "ticker run --nats" publishes
// to <prefix>.schedule.<name> on the same stream. A Consumer acks it
// and passes it by; it is not undecodable, only someone else's.
var errNotTime = errors.New("natsjs: not the passage of time")

// decode turns a message published under prefix back into the event: a
// tick.MinuteHasPassed for <prefix>.minute and so on, a tick.TicksSkipped
// for <prefix>.skipped.<unit>. A subject of more tokens under prefix is
// errNotTime; other errors wrap ErrUndecodable.
func decode(prefix, subject string, data []byte) (any, error) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return nil, fmt.Errorf("%w: subject %q is not under %q", ErrUndecodable, subject, prefix)
	}
	unit, skipped := strings.CutPrefix(rest, skippedToken+".")
	if !skipped && strings.Contains(rest, ".") {
		return nil, fmt.Errorf("%w: %s", errNotTime, subject)
	}
	if skipped {
		var s tick.TicksSkipped
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrUndecodable, subject, err)
		}
		if s.Unit != tick.Unit(unit) {
			return nil, fmt.Errorf("%w: %s: a skip report of unit %q", ErrUndecodable, subject, s.Unit)
		}
		return s, nil
	}
	var p tick.Passage
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUndecodable, subject, err)
	}
	ev, err := tick.NewEvent(tick.Unit(rest), p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUndecodable, subject, err)
	}
	return ev, nil
}
