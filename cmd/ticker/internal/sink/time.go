package sink

import (
	"time"

	"github.com/passage-of-time/passage/tick"
)

// Time is an instant whose JSON form is lossless (tick.JSONTime): RFC 3339
// with the offset's seconds when it has any, read back as the same instant
// in the same offset.
type Time = tick.JSONTime

// TimeOf returns t as a *Time; the zero time is nil, which JSON shows as
// null (or omits).
func TimeOf(t time.Time) *Time { return tick.JSONTimeOf(t) }
