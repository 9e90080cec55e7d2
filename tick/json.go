package tick

import (
	"encoding/json"
	"fmt"
	"time"
)

// encoding/json writes a time.Time in RFC 3339, whose offsets have minutes
// only: a boundary in local mean time, such as Africa/Monrovia's -00:44:30
// until 1972, would come back as another instant. The events therefore
// write their instants with AppendTime and read them with ParseTime; the
// field names are those encoding/json gives the structs.

// jsonTime is a time.Time written by AppendTime and read by ParseTime.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(LayoutSecondsOffset)+2)
	b = append(b, '"')
	b = AppendTime(b, time.Time(t))
	return append(b, '"'), nil
}

func (t *jsonTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // as time.Time does: null leaves the value alone
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("tick: an instant must be a JSON string: %w", err)
	}
	v, err := ParseTime(s)
	if err != nil {
		return err
	}
	*t = jsonTime(v)
	return nil
}

type passageJSON struct {
	At        jsonTime
	Since     jsonTime
	EmittedAt jsonTime
	CatchUp   bool
}

// MarshalJSON writes p as encoding/json would — {"At", "Since",
// "EmittedAt", "CatchUp"} — but with its instants printed by FormatTime,
// so that an offset with seconds survives. The event types embed Passage
// and so marshal the same way; a type of yours that embeds Passage and adds
// fields inherits this method too, and needs a MarshalJSON of its own to
// keep them.
func (p Passage) MarshalJSON() ([]byte, error) {
	return json.Marshal(passageJSON{jsonTime(p.At), jsonTime(p.Since), jsonTime(p.EmittedAt), p.CatchUp})
}

// UnmarshalJSON reads what MarshalJSON writes, and RFC 3339 instants too:
// each instant comes back equal, with its offset.
func (p *Passage) UnmarshalJSON(b []byte) error {
	v := passageJSON{jsonTime(p.At), jsonTime(p.Since), jsonTime(p.EmittedAt), p.CatchUp}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("tick: decode passage: %w", err)
	}
	*p = Passage{At: time.Time(v.At), Since: time.Time(v.Since), EmittedAt: time.Time(v.EmittedAt), CatchUp: v.CatchUp}
	return nil
}

type ticksSkippedJSON struct {
	Unit      Unit
	From      jsonTime
	To        jsonTime
	Count     int64
	Policy    string
	EmittedAt jsonTime
}

// MarshalJSON writes s as encoding/json would, with its instants printed
// by FormatTime (see Passage.MarshalJSON).
func (s TicksSkipped) MarshalJSON() ([]byte, error) {
	return json.Marshal(ticksSkippedJSON{s.Unit, jsonTime(s.From), jsonTime(s.To), s.Count, s.Policy, jsonTime(s.EmittedAt)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *TicksSkipped) UnmarshalJSON(b []byte) error {
	v := ticksSkippedJSON{s.Unit, jsonTime(s.From), jsonTime(s.To), s.Count, s.Policy, jsonTime(s.EmittedAt)}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("tick: decode skip report: %w", err)
	}
	*s = TicksSkipped{Unit: v.Unit, From: time.Time(v.From), To: time.Time(v.To), Count: v.Count, Policy: v.Policy, EmittedAt: time.Time(v.EmittedAt)}
	return nil
}
