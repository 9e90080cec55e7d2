package natsjs

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/tick"
)

// Publisher is a tick.Publisher that stores the passage of time on a
// JetStream stream: each boundary under <prefix>.<unit>
// (passage.time.minute, .hour, …) and each skip report under
// <prefix>.skipped.<unit>, each a CloudEvent whose body is its data
// (lossless, snake_case JSON) and whose attributes are ce- headers (see
// Encode), with Nats-Msg-Id the event's identity (tick.Event.ID: unit and
// boundary).
//
// Publish returns only once the server has acknowledged storing the
// event, so a Ticker moves its cursor only past stored boundaries; a
// replica that publishes the same boundary again, after a crash or a
// lease hand-over, is told by the server it is a duplicate and nothing
// is stored twice (within the stream's duplicate window: see
// WithDuplicateWindow). A Publisher is safe for concurrent use.
type Publisher struct {
	js     jetstream.JetStream
	prefix string
	stream string

	stored, duplicates atomic.Int64
}

var _ tick.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher of the subjects under prefix. It checks
// the prefix (ErrInvalidPrefix) and that a stream stores every subject
// under it (ErrNoStream; see EnsureStream), asking the server: an
// unreachable server is an error here, naming it, before any ticker
// starts, rather than a failing publish later.
func NewPublisher(ctx context.Context, js jetstream.JetStream, prefix string) (*Publisher, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: NewPublisher: nil JetStream", ErrInvalidOption)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	s, err := streamFor(ctx, js, prefix)
	if err != nil {
		return nil, err
	}
	return &Publisher{js: js, prefix: prefix, stream: s.CachedInfo().Config.Name}, nil
}

// Stream returns the name of the stream the publisher's events are
// stored on.
func (p *Publisher) Stream() string { return p.stream }

// Publish stores events in order, each acknowledged by the server before
// the next is sent, and stops at the first failure: the ticker publishes
// that one again later, and the server de-duplicates what was stored
// but not acknowledged. Events that are not a tick.Event or a
// tick.TicksSkipped are refused with ErrUnsupportedEvent. Cancelling ctx
// gives up the wait for the ack; without a deadline the connection's
// JetStream timeout (five seconds by default) bounds it.
func (p *Publisher) Publish(ctx context.Context, events ...any) error {
	for i, ev := range events {
		msg, err := encode(p.prefix, ev)
		if err != nil {
			return fmt.Errorf("natsjs: publish event %d of %d: %w", i+1, len(events), err)
		}
		// ExpectStream: stored on the stream NewPublisher checked, not on
		// another that came to claim the subjects since.
		ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(p.stream))
		if err != nil {
			return fmt.Errorf("natsjs: publish %s to %s on stream %s %s: %w",
				msg.Header.Get(jetstream.MsgIDHeader), msg.Subject, p.stream, where(p.js.Conn()), err)
		}
		if ack.Duplicate {
			p.duplicates.Add(1)
		} else {
			p.stored.Add(1)
		}
	}
	return nil
}

// PublisherStats counts what a Publisher's acknowledged publishes did.
type PublisherStats struct {
	// Stored counts events the server stored.
	Stored int64
	// Duplicates counts events the server had already (same Nats-Msg-Id
	// within the duplicate window) and did not store again.
	Duplicates int64
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{Stored: p.stored.Load(), Duplicates: p.duplicates.Load()}
}
