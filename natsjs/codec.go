package natsjs

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/tick"
)

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
// covers, which a ticker re-emitting it reports the same.
func skippedID(s tick.TicksSkipped) string {
	return fmt.Sprintf("%s/%s/%s/%s", skippedToken, s.Unit, tick.FormatTime(s.From.UTC()), tick.FormatTime(s.To.UTC()))
}

// decode turns a message published under prefix back into the event: a
// tick.MinuteHasPassed for <prefix>.minute and so on, a tick.TicksSkipped
// for <prefix>.skipped.<unit>. Errors wrap ErrUndecodable.
func decode(prefix, subject string, data []byte) (any, error) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return nil, fmt.Errorf("%w: subject %q is not under %q", ErrUndecodable, subject, prefix)
	}
	if unit, ok := strings.CutPrefix(rest, skippedToken+"."); ok {
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
