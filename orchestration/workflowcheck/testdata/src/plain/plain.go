// Package plain has a path without a dot, like the standard library's: calls
// into it are not followed.
package plain

import "time"

// Stamp reads the clock.
func Stamp() time.Time { return time.Now() }
