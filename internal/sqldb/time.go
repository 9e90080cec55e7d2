package sqldb

import "time"

// EncodeTime is the canonical storage form of an instant: nanoseconds since
// the Unix epoch. It sorts like the instants themselves and is exact within
// the years 1678–2262.
func EncodeTime(t time.Time) int64 { return t.UnixNano() }

// DecodeTime turns a stored instant back into a time.Time in UTC; callers
// convert to their own zone with In.
func DecodeTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }
