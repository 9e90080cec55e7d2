package timefmt

import (
	"fmt"
	"time"
)

const (
	// LayoutSecondsOffset is time.RFC3339Nano with the offset's seconds.
	LayoutSecondsOffset = "2006-01-02T15:04:05.999999999Z07:00:00"
	// LayoutSecondsOffsetShort is time.RFC3339 with the offset's seconds.
	LayoutSecondsOffsetShort = "2006-01-02T15:04:05Z07:00:00"
)

// Format prints t losslessly: RFC 3339 with nanoseconds when needed
// (time.RFC3339Nano), and the offset's seconds when it has any
// (LayoutSecondsOffset). Parse reads it back to the same instant and
// offset.
func Format(t time.Time) string {
	if hasSecondsOffset(t) {
		return t.Format(LayoutSecondsOffset)
	}
	return t.Format(time.RFC3339Nano)
}

// Append is Format appending to b.
func Append(b []byte, t time.Time) []byte {
	if hasSecondsOffset(t) {
		return t.AppendFormat(b, LayoutSecondsOffset)
	}
	return t.AppendFormat(b, time.RFC3339Nano)
}

// Parse reads an instant printed by Format, time.RFC3339 or
// time.RFC3339Nano: an offset of hours and minutes, optionally seconds, or
// Z. Its error names the text.
func Parse(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err == nil {
		return t, nil
	}
	if t, err2 := time.Parse(LayoutSecondsOffset, s); err2 == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 instant (with an offset such as Z, +01:00 or -00:44:30): %w", s, err)
}

func hasSecondsOffset(t time.Time) bool {
	_, off := t.Zone()
	return off%60 != 0
}
