package sink

import (
	"fmt"
	"time"

	"github.com/passage-of-time/passage/tick"
)

// Time is an instant whose JSON form is lossless: RFC 3339 with the
// offset's seconds when it has any (tick.FormatTime). encoding/json
// writes a time.Time with time.RFC3339Nano, which prints local mean time
// such as Africa/Monrovia's -00:44:30 as -00:44, naming another instant;
// a Time read back from what it printed is the same instant, in the same
// offset.
type Time struct{ time.Time }

// MarshalJSON implements json.Marshaler with tick.AppendTime.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(tick.LayoutSecondsOffset)+2)
	b = append(b, '"')
	b = tick.AppendTime(b, t.Time)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler with tick.ParseTime, so it
// reads offsets with seconds as well as plain RFC 3339.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("sink: time %s is not a JSON string", b)
	}
	parsed, err := tick.ParseTime(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	t.Time = parsed
	return nil
}

// TimeOf returns t as a *Time; the zero time is nil, which JSON shows as
// null (or omits).
func TimeOf(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t}
}
