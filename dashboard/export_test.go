package dashboard

import (
	"context"
	"time"
)

// WithBodyTimeout shortens the read deadline of a request's body, so a
// test of it does not wait 10 s.
func WithBodyTimeout(t time.Duration) Option {
	return func(d *Dashboard) error {
		d.bodyTimeout = t
		return nil
	}
}

// ReadSummary reads the summary at the top of the pages at now, uncached:
// for the benchmark of its cost.
func (d *Dashboard) ReadSummary(ctx context.Context, now time.Time) (items int, err string) {
	s := d.readSummary(ctx, now, nil)
	return len(s.Items), s.Error
}
