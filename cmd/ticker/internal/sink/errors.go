package sink

import "errors"

var (
	// ErrBadWebhookURL is returned by NewWebhook for a URL that is not
	// absolute http(s).
	ErrBadWebhookURL = errors.New("sink: webhook URL must be an absolute http:// or https:// URL")
	// ErrBadWebhookSecret is returned by NewWebhook and WebhookKey for a
	// secret that starts with whsec_ (Standard Webhooks' serialisation)
	// whose rest is not base64.
	ErrBadWebhookSecret = errors.New("sink: bad webhook secret")
	// ErrBadNATSConfig is returned by CheckNATS and NewNATS for a NATS
	// sink's configuration that cannot work whatever the server: a URL
	// that is not nats://, tls://, ws:// or wss://, a subject prefix with
	// a wildcard, an empty token or white space, a stream name JetStream
	// refuses.
	ErrBadNATSConfig = errors.New("sink: bad NATS configuration")
	// ErrNotATickEvent is returned for a value that is none of what the
	// ticker publishes: a tick.Event, a tick.TicksSkipped report, a
	// schedule.Run or a schedule.SlotsSkipped report.
	ErrNotATickEvent = errors.New("sink: not a passage-of-time event")
)
