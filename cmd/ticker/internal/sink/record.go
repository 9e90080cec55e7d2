package sink

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// Record is the JSON form of what a ticker publishes, one object per event.
// A passage-of-time event fills Boundary, Previous (null for the first) and
// CatchUp; a tick.TicksSkipped report (type "TicksSkipped") fills From, To,
// Count and Policy instead. Instants are [Time]s: lossless, with the
// offset's seconds when the zone has them.
type Record struct {
	Type      string    `json:"type"`
	ID        string    `json:"id"`
	Unit      tick.Unit `json:"unit"`
	Boundary  *Time     `json:"boundary,omitempty"`
	Previous  *Time     `json:"previous"`
	EmittedAt Time      `json:"emitted_at"`
	CatchUp   bool      `json:"catch_up"`
	From      *Time     `json:"from,omitempty"`
	To        *Time     `json:"to,omitempty"`
	Count     int64     `json:"count,omitempty"`
	Policy    string    `json:"policy,omitempty"`
}

// NewRecord converts a tick event or a tick.TicksSkipped report into its JSON
// form; any other value is an error.
func NewRecord(event any) (Record, error) {
	if s, ok := event.(tick.TicksSkipped); ok {
		return Record{
			Type:      "TicksSkipped",
			ID:        fmt.Sprintf("skipped/%s/%s..%s", s.Unit, s.From.UTC().Format(time.RFC3339Nano), s.To.UTC().Format(time.RFC3339Nano)),
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
	p, ok := passage(e)
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

func passage(e tick.Event) (tick.Passage, bool) {
	switch e := e.(type) {
	case tick.MinuteHasPassed:
		return e.Passage, true
	case tick.HourHasPassed:
		return e.Passage, true
	case tick.DayHasPassed:
		return e.Passage, true
	case tick.WeekHasPassed:
		return e.Passage, true
	case tick.MonthHasPassed:
		return e.Passage, true
	case tick.QuarterHasPassed:
		return e.Passage, true
	case tick.YearHasPassed:
		return e.Passage, true
	}
	return tick.Passage{}, false
}

// Envelope is what every record carries whatever its type: the type and
// the id a receiver deduplicates by, which a webhook also sends as the
// X-Passage-Event and Idempotency-Key headers.
type Envelope struct {
	Type, ID string
}

// Marshal returns the JSON body of an event — a tick event or report
// ([Record]), a schedule's run ([RunRecord]) or a schedule's skipped slots
// ([SlotsSkippedRecord]) — and its envelope.
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
