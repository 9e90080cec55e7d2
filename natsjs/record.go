package natsjs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/tick"
)

// EncodeRecord returns the message of an event already written as a
// CloudEvent — its context ce and its data, JSON — as an outbox stores
// it for a relay to publish after the commit ("ticker run --nats" does).
// data is the message's body as it is: nothing is decoded into an event
// and encoded again. The subject and the Nats-Msg-Id are the layout's:
//
//	<prefix>.<unit>                    a boundary (MinuteHasPassed, …), as Encode lays it out
//	<prefix>.skipped.<unit>            a TicksSkipped report, likewise
//	<prefix>.schedule.<name>           a ScheduleRun of the schedule ce.Subject names
//	<prefix>.schedule.<name>.skipped   its SlotsSkipped reports
//
// A schedule's name becomes one token, ASCII letters, digits, '-' and '_'
// as they are and every other byte as %XX ("billing.eu" is
// billing%2Eeu). The Nats-Msg-Id is MsgID(ce.ID), and ce goes into the
// ce- headers (CloudEvent.SetHeaders). A record of time must be the
// message Encode makes of its event: its data's unit a unit whose event
// type is ce.Type, with the instants the id is made of; ce.ID that id,
// ce.Source SourceTick, ce.Subject the unit and ce.Time the boundary (a
// report's last skipped one). A schedule's record must come from
// SourceSchedule and name its schedule. Any other record is refused with
// an error wrapping ErrUnsupportedEvent (CheckRecordType's, for a type
// without a subject); a bad prefix, with a *PrefixError.
func EncodeRecord(prefix string, ce CloudEvent, data []byte) (*nats.Msg, error) {
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	if err := CheckRecordType(ce.Type); err != nil {
		return nil, err
	}
	recordSubject := timeRecordSubject
	if isScheduleRecord(ce.Type) {
		recordSubject = scheduleRecordSubject
	}
	subject, err := recordSubject(prefix, ce, data)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, MsgID(ce.ID))
	ce.SetHeaders(msg.Header)
	return msg, nil
}

// CheckRecordType refuses a record type EncodeRecord gives no subject:
// one that is none of a boundary's (…HasPassed), TypeTicksSkipped,
// TypeScheduleRun and TypeSlotsSkipped. The error wraps
// ErrUnsupportedEvent.
func CheckRecordType(typ string) error {
	if !isScheduleRecord(typ) && typ != TypeTicksSkipped && !strings.HasSuffix(typ, "HasPassed") {
		return fmt.Errorf("%w: record type %q has no subject", ErrUnsupportedEvent, typ)
	}
	return nil
}

// isScheduleRecord reports whether records of type typ are a schedule's,
// which go under <prefix>.schedule.
func isScheduleRecord(typ string) bool { return typ == TypeScheduleRun || typ == TypeSlotsSkipped }

// refused is EncodeRecord's error for a record it does not publish.
func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupportedEvent, fmt.Sprintf(format, args...))
}

// scheduleRecordSubject is the subject of a schedule's record, whose data
// it does not need: ce.Subject names the schedule.
func scheduleRecordSubject(prefix string, ce CloudEvent, _ []byte) (string, error) {
	switch {
	case ce.Subject == "":
		return "", refused("a %s record without a schedule", ce.Type)
	case ce.Source != SourceSchedule:
		return "", refused("a %s record from %q: a schedule's records come from %s", ce.Type, ce.Source, SourceSchedule)
	}
	return scheduleSubject(prefix, ce.Subject, ce.Type == TypeSlotsSkipped), nil
}

// timeRecord is what a record of time's data says that its subject and
// its id are made of: the fields of boundaryData and skippedData.
type timeRecord struct {
	Unit     tick.Unit      `json:"unit"`
	Boundary *tick.JSONTime `json:"boundary"`
	From     *tick.JSONTime `json:"from"`
	To       *tick.JSONTime `json:"to"`
}

// timeRecordSubject is the subject of a record of time, once its data and
// its context are found to agree as Encode would have made them.
func timeRecordSubject(prefix string, ce CloudEvent, data []byte) (string, error) {
	var r timeRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return "", refused("a %s record whose data is not its fields: %v", ce.Type, err)
	}
	u, err := tick.ParseUnit(string(r.Unit))
	if err != nil || u != r.Unit {
		return "", refused("a %s record without a unit of time (unit %q)", ce.Type, r.Unit)
	}
	id, at, err := timeRecordID(u, ce.Type, r)
	switch {
	case err != nil:
		return "", err
	case ce.ID != id:
		return "", refused("a %s record whose id %q is not its event's id %q", ce.Type, ce.ID, id)
	case ce.Source != SourceTick:
		return "", refused("a %s record from %q: time comes from %s", ce.Type, ce.Source, SourceTick)
	case ce.Subject != string(u):
		return "", refused("a %s record whose subject %q is not its unit %s", ce.Type, ce.Subject, u)
	case !ce.Time.Equal(at):
		return "", refused("a %s record whose time %s is not the instant its data is about, %s", ce.Type, FormatTime(ce.Time), FormatTime(at))
	}
	if ce.Type == TypeTicksSkipped {
		return skippedSubject(prefix, u)
	}
	return boundarySubject(prefix, u)
}

// timeRecordID is the id of a record of time of unit u and type typ, and
// the instant it is about (a boundary, a report's last skipped one), from
// the fields of its data that make them.
func timeRecordID(u tick.Unit, typ string, r timeRecord) (id string, at time.Time, err error) {
	if typ == TypeTicksSkipped {
		if r.From == nil || r.To == nil {
			return "", at, refused("a TicksSkipped record without from or to")
		}
		return SkippedID(tick.TicksSkipped{Unit: u, From: r.From.Time, To: r.To.Time}), r.To.Time, nil
	}
	if r.Boundary == nil {
		return "", at, refused("a %s record without a boundary", typ)
	}
	ev, err := tick.NewEvent(u, tick.Passage{At: r.Boundary.Time})
	if err != nil {
		return "", at, refused("a %s record: %v", typ, err)
	}
	if name := reflect.TypeOf(ev).Name(); name != typ {
		return "", at, refused("a %s record of unit %s, whose boundaries are %s", typ, u, name)
	}
	return ev.ID(), r.Boundary.Time, nil
}
