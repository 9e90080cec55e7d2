package sqldb

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// EncodeTime is the canonical storage form of an instant: nanoseconds since
// the Unix epoch. It sorts like the instants themselves and is exact within
// the years 1678–2262.
func EncodeTime(t time.Time) int64 { return t.UnixNano() }

// DecodeTime turns a stored instant back into a time.Time in UTC; callers
// convert to their own zone with In.
func DecodeTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// The instants EncodeTime stores exactly: int64 nanoseconds around 1970.
var (
	MinTime = time.Unix(0, math.MinInt64).UTC() // 1677-09-21T00:12:43.145224192Z
	MaxTime = time.Unix(0, math.MaxInt64).UTC() // 2262-04-11T23:47:16.854775807Z
)

// ErrTimeOutOfRange is returned by CheckTime.
var ErrTimeOutOfRange = errors.New("sqldb: instant out of the storable range")

// CheckTime returns an error wrapping ErrTimeOutOfRange for an instant
// EncodeTime cannot store, which it would wrap around to another one
// silently (an expiry far in the future would land in the past).
func CheckTime(t time.Time) error {
	if t.Before(MinTime) || t.After(MaxTime) {
		return fmt.Errorf("%w: %s is not between %s and %s", ErrTimeOutOfRange,
			t.Format(time.RFC3339Nano), MinTime.Format(time.RFC3339Nano), MaxTime.Format(time.RFC3339Nano))
	}
	return nil
}
