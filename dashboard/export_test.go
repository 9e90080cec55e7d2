package dashboard

import "time"

// WithBodyTimeout shortens the read deadline of a request's body, so a
// test of it does not wait 10 s.
func WithBodyTimeout(t time.Duration) Option {
	return func(d *Dashboard) error {
		d.bodyTimeout = t
		return nil
	}
}
