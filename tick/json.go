package tick

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// encoding/json writes a time.Time in RFC 3339, whose offsets have minutes
// only: a boundary in local mean time, such as Africa/Monrovia's -00:44:30
// until 1972, would come back as another instant. The events therefore
// write their instants with timefmt.Append and read them with timefmt.Parse; the
// field names are those encoding/json gives the structs.

// JSONTime is an instant whose JSON form is lossless: a string written by
// timefmt.Append (RFC 3339, with the offset's seconds when it has any) and read
// by timefmt.Parse, so that it comes back the same instant in the same offset.
// encoding/json writes a time.Time with time.RFC3339Nano, which prints
// Africa/Monrovia's -00:44:30 as -00:44, naming another instant. The
// event types marshal their instants this way; use it in JSON of your own
// (the ticker's sinks and the dashboard's API do). JSON null leaves it
// as it was, as it does a time.Time.
type JSONTime struct{ time.Time }

// JSONTimeOf returns t as a *JSONTime, and the zero time as nil, which JSON
// shows as null (or omits).
func JSONTimeOf(t time.Time) *JSONTime {
	if t.IsZero() {
		return nil
	}
	return &JSONTime{t}
}

// MarshalJSON implements json.Marshaler with timefmt.Append.
func (t JSONTime) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(timefmt.LayoutSecondsOffset)+2)
	b = append(b, '"')
	b = timefmt.Append(b, t.Time)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler with timefmt.Parse.
func (t *JSONTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("tick: an instant must be a JSON string: %w", err)
	}
	v, err := timefmt.Parse(s)
	if err != nil {
		return fmt.Errorf("tick: %w", err)
	}
	t.Time = v
	return nil
}

type passageJSON struct {
	At        JSONTime
	Since     JSONTime
	EmittedAt JSONTime
	CatchUp   bool
}

// MarshalJSON writes p as encoding/json would — {"At", "Since",
// "EmittedAt", "CatchUp"} — but with its instants printed by timefmt.Format,
// so that an offset with seconds survives. The event types embed Passage
// and so marshal the same way; a type of yours that embeds Passage and adds
// fields inherits this method too, and needs a MarshalJSON of its own to
// keep them.
func (p Passage) MarshalJSON() ([]byte, error) {
	return json.Marshal(passageJSON{JSONTime{p.At}, JSONTime{p.Since}, JSONTime{p.EmittedAt}, p.CatchUp})
}

// UnmarshalJSON reads what MarshalJSON writes, and RFC 3339 instants too:
// each instant comes back equal, with its offset.
func (p *Passage) UnmarshalJSON(b []byte) error {
	v := passageJSON{JSONTime{p.At}, JSONTime{p.Since}, JSONTime{p.EmittedAt}, p.CatchUp}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("tick: decode passage: %w", err)
	}
	*p = Passage{At: v.At.Time, Since: v.Since.Time, EmittedAt: v.EmittedAt.Time, CatchUp: v.CatchUp}
	return nil
}

type ticksSkippedJSON struct {
	Unit      Unit
	From      JSONTime
	To        JSONTime
	Count     int64
	Policy    string
	EmittedAt JSONTime
}

// MarshalJSON writes s as encoding/json would, with its instants printed
// by timefmt.Format (see Passage.MarshalJSON).
func (s TicksSkipped) MarshalJSON() ([]byte, error) {
	return json.Marshal(ticksSkippedJSON{s.Unit, JSONTime{s.From}, JSONTime{s.To}, s.Count, s.Policy, JSONTime{s.EmittedAt}})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *TicksSkipped) UnmarshalJSON(b []byte) error {
	v := ticksSkippedJSON{s.Unit, JSONTime{s.From}, JSONTime{s.To}, s.Count, s.Policy, JSONTime{s.EmittedAt}}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("tick: decode skip report: %w", err)
	}
	*s = TicksSkipped{Unit: v.Unit, From: v.From.Time, To: v.To.Time, Count: v.Count, Policy: v.Policy, EmittedAt: v.EmittedAt.Time}
	return nil
}
