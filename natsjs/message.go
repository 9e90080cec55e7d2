package natsjs

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Message describes the JetStream message an event came from. A Consumer
// puts it in the context its handlers get; read it with MessageFrom.
type Message struct {
	// ID is the message's identity: its Nats-Msg-Id (for a boundary, the
	// event's ID, unit and boundary), or "<stream>/<sequence>" for a
	// message published without one. Redeliveries, and the same event
	// published again after the duplicate window, keep it.
	ID string
	// Subject is the subject the message was published to.
	Subject string
	// Stream and Sequence are where the message is stored.
	Stream   string
	Sequence uint64
	// Delivered counts deliveries to this consumer, this one included: 1
	// the first time, more on a redelivery.
	Delivered uint64
}

type messageKey struct{}

// MessageFrom returns the message the event a handler is running for
// came from, when a Consumer published it.
func MessageFrom(ctx context.Context) (Message, bool) {
	m, ok := ctx.Value(messageKey{}).(Message)
	return m, ok
}

func withMessage(ctx context.Context, m Message) context.Context {
	return context.WithValue(ctx, messageKey{}, m)
}

// describe reads what a Message holds from msg.
func describe(msg jetstream.Msg) (Message, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return Message{}, fmt.Errorf("natsjs: metadata of a message on %s: %w", msg.Subject(), err)
	}
	id := msg.Headers().Get(jetstream.MsgIDHeader)
	if id == "" {
		id = fmt.Sprintf("%s/%d", meta.Stream, meta.Sequence.Stream)
	}
	return Message{
		ID:        id,
		Subject:   msg.Subject(),
		Stream:    meta.Stream,
		Sequence:  meta.Sequence.Stream,
		Delivered: meta.NumDelivered,
	}, nil
}
