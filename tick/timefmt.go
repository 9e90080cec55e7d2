package tick

import (
	"time"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// FormatTime is timefmt.Format: it prints t losslessly, RFC 3339 with the
// offset's seconds when it has any. It stays exported only until its last
// callers outside this package (schedule, natsjs)
// use internal/timefmt; new code calls timefmt.Format.
func FormatTime(t time.Time) string { return timefmt.Format(t) }
