package sink

import "errors"

var (
	// ErrBadWebhookURL is returned by NewWebhook for a URL that is not
	// absolute http(s).
	ErrBadWebhookURL = errors.New("sink: webhook URL must be an absolute http:// or https:// URL")
	// ErrNotATickEvent is returned for a value that is none of what the
	// ticker publishes: a tick.Event, a tick.TicksSkipped report, a
	// schedule.Run or a schedule.SlotsSkipped report.
	ErrNotATickEvent = errors.New("sink: not a passage-of-time event")
)
