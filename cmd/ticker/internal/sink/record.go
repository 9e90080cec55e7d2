package sink

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// The record types besides the boundaries' (MinuteHasPassed …
// YearHasPassed, the names of tick's events): each is a CloudEvents type.
const (
	TypeTicksSkipped = natsjs.TypeTicksSkipped
	TypeScheduleRun  = natsjs.TypeScheduleRun
	TypeSlotsSkipped = natsjs.TypeSlotsSkipped
)

// Record is what a ticker publishes, one per event: a boundary, which
// fills Boundary, Previous (nil for an event built without a ticker) and
// CatchUp, or a tick.TicksSkipped report (Type "TicksSkipped"), which
// fills From, To, Count and Policy instead. Instants are [Time]s:
// lossless, with the offset's seconds when the zone has them.
//
// Its JSON form is its CloudEvent ([Event]): source natsjs.SourceTick,
// subject the unit, time the boundary (a report's To), and data
//
//	boundary:  {"unit", "boundary", "previous", "emitted_at", "catch_up"}
//	report:    {"unit", "from", "to", "count", "policy", "emitted_at"}
//
// It reads that form back, and, for one release, the flat object
// records had before the envelope ({"type", "id", "unit", "boundary", …}),
// which an older ticker may have left in the outbox.
type Record struct {
	Type      string
	ID        string
	Unit      tick.Unit
	Boundary  *Time
	Previous  *Time
	EmittedAt Time
	CatchUp   bool
	From      *Time
	To        *Time
	Count     int64
	Policy    string
}

// boundaryData is a boundary's data. natsjs.Encode writes the same
// fields, in the same order, as the body of a boundary on NATS, and the
// NATS sink sends this data as it is (natsjs.EncodeRecord): the two must
// stay byte for byte the same, which TestNATSTimeIsLaidOutAsNatsjsLaysItOut
// checks for every unit.
type boundaryData struct {
	Unit      tick.Unit `json:"unit"`
	Boundary  *Time     `json:"boundary"`
	Previous  *Time     `json:"previous"`
	EmittedAt Time      `json:"emitted_at"`
	CatchUp   bool      `json:"catch_up"`
}

// ticksSkippedData is a tick.TicksSkipped report's data.
type ticksSkippedData struct {
	Unit      tick.Unit `json:"unit"`
	From      *Time     `json:"from"`
	To        *Time     `json:"to"`
	Count     int64     `json:"count"`
	Policy    string    `json:"policy"`
	EmittedAt Time      `json:"emitted_at"`
}

// legacyRecord is the flat JSON of a Record before the envelope.
type legacyRecord struct {
	Type      string    `json:"type"`
	ID        string    `json:"id"`
	Unit      tick.Unit `json:"unit"`
	Boundary  *Time     `json:"boundary"`
	Previous  *Time     `json:"previous"`
	EmittedAt Time      `json:"emitted_at"`
	CatchUp   bool      `json:"catch_up"`
	From      *Time     `json:"from"`
	To        *Time     `json:"to"`
	Count     int64     `json:"count"`
	Policy    string    `json:"policy"`
}

// MarshalJSON writes r's CloudEvent.
func (r Record) MarshalJSON() ([]byte, error) {
	if r.Type == TypeTicksSkipped {
		if r.From == nil || r.To == nil {
			return nil, fmt.Errorf("sink: a TicksSkipped record without from or to")
		}
		return marshalEvent(r.ID, natsjs.SourceTick, r.Type, string(r.Unit), r.To.Time,
			ticksSkippedData{Unit: r.Unit, From: r.From, To: r.To, Count: r.Count, Policy: r.Policy, EmittedAt: r.EmittedAt})
	}
	if r.Boundary == nil {
		return nil, fmt.Errorf("sink: a %s record without a boundary", r.Type)
	}
	return marshalEvent(r.ID, natsjs.SourceTick, r.Type, string(r.Unit), r.Boundary.Time,
		boundaryData{Unit: r.Unit, Boundary: r.Boundary, Previous: r.Previous, EmittedAt: r.EmittedAt, CatchUp: r.CatchUp})
}

// UnmarshalJSON reads a record's CloudEvent, or its flat JSON from
// before the envelope.
func (r *Record) UnmarshalJSON(b []byte) error {
	ev, ok, err := readEvent(b)
	if err != nil {
		return fmt.Errorf("sink: read a record: %w", err)
	}
	if !ok {
		var l legacyRecord
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("sink: read a record: %w", err)
		}
		*r = Record(l)
		return nil
	}
	*r = Record{Type: ev.Type, ID: ev.ID}
	if ev.Type == TypeTicksSkipped {
		var d ticksSkippedData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return fmt.Errorf("sink: read the data of %s: %w", ev.ID, err)
		}
		r.Unit, r.From, r.To, r.Count, r.Policy, r.EmittedAt = d.Unit, d.From, d.To, d.Count, d.Policy, d.EmittedAt
		return nil
	}
	var d boundaryData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return fmt.Errorf("sink: read the data of %s: %w", ev.ID, err)
	}
	r.Unit, r.Boundary, r.Previous, r.EmittedAt, r.CatchUp = d.Unit, d.Boundary, d.Previous, d.EmittedAt, d.CatchUp
	return nil
}

// NewRecord converts a tick event or a tick.TicksSkipped report into its
// record; any other value is an error.
func NewRecord(event any) (Record, error) {
	if s, ok := event.(tick.TicksSkipped); ok {
		return Record{
			Type:      TypeTicksSkipped,
			ID:        natsjs.SkippedID(s),
			Unit:      s.Unit,
			EmittedAt: Time{Time: s.EmittedAt},
			From:      &Time{Time: s.From},
			To:        &Time{Time: s.To},
			Count:     s.Count,
			Policy:    s.Policy,
		}, nil
	}
	e, ok := event.(tick.Event)
	if !ok {
		return Record{}, fmt.Errorf("%w: %T", ErrNotATickEvent, event)
	}
	p, ok := tick.PassageOf(e)
	if !ok {
		return Record{}, fmt.Errorf("%w: %T does not carry a tick.Passage", ErrNotATickEvent, event)
	}
	r := Record{
		Type:      reflect.TypeOf(event).Name(),
		ID:        e.ID(),
		Unit:      e.Unit(),
		Boundary:  &Time{Time: p.At},
		EmittedAt: Time{Time: p.EmittedAt},
		CatchUp:   p.CatchUp,
		Previous:  TimeOf(p.Since),
	}
	return r, nil
}

// Envelope is what a record carries whatever its type: the type and the
// id a receiver deduplicates by, the CloudEvent's type and id, which the
// outbox stores beside the body and a webhook also sends as headers.
type Envelope struct {
	Type, ID string
}

// Marshal returns the JSON body of an event — a tick event or report
// ([Record]), a schedule's run ([RunRecord]) or a schedule's skipped slots
// ([SlotsSkippedRecord]) — which is its CloudEvent ([Event]), and its
// type and id.
func Marshal(event any) ([]byte, Envelope, error) {
	var (
		v   any
		env Envelope
	)
	switch e := event.(type) {
	case schedule.Run:
		r := NewRunRecord(e)
		v, env = r, Envelope{r.Type, r.ID}
	case schedule.SlotsSkipped:
		r := NewSlotsSkippedRecord(e)
		v, env = r, Envelope{r.Type, r.ID}
	default:
		r, err := NewRecord(event)
		if err != nil {
			return nil, Envelope{}, err
		}
		v, env = r, Envelope{r.Type, r.ID}
	}
	body, err := json.Marshal(v)
	return body, env, err
}
