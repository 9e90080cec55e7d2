package natsjs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/outbox"
)

// The headers an EventSink sets on each event it publishes, besides
// Nats-Msg-Id ("<stream>/<version>").
const (
	// HeaderStream is the event's eventstore stream.
	HeaderStream = "Passage-Stream"
	// HeaderVersion is the event's version in its stream, from 1.
	HeaderVersion = "Passage-Version"
	// HeaderType is the name the event's Go type is registered under.
	HeaderType = "Passage-Type"
	// HeaderRecordedAt is when the event was appended (RFC 3339, UTC).
	HeaderRecordedAt = "Passage-Recorded-At"
)

// eventRecordType marks the outbox records RecordEvents writes, so that an
// EventSink passes over other writers' records in a shared outbox.
const eventRecordType = "eventstore:"

// RecordEvents returns an eventstore hook (eventstore.WithInTransaction)
// that writes every appended event to the outbox ob in the append's own
// transaction: an event is in the outbox if and only if it committed. ob
// must be on the store's database. Each record's stream is the event's
// stream and its key "<stream>/<version>", the identity an EventSink
// publishes as Nats-Msg-Id.
//
// The event is published under <prefix>.<type>, so its registered type
// name must be one or more subject tokens ("OrderPlaced",
// "orders.placed"): an append of a type that is not is refused, naming
// it, and nothing is stored.
func RecordEvents(ob *outbox.Outbox) eventstore.TxHook {
	return func(ctx context.Context, tx sqlx.ExtContext, recorded []eventstore.Recorded) error {
		if ob == nil {
			return fmt.Errorf("%w: RecordEvents: nil outbox", ErrInvalidOption)
		}
		records := make([]outbox.Record, 0, len(recorded))
		for _, r := range recorded {
			if err := checkSubjectSuffix(r.Type); err != nil {
				return fmt.Errorf("%w: event type %q cannot end a subject: %v", ErrUnsupportedEvent, r.Type, err)
			}
			body, err := json.Marshal(r.Event)
			if err != nil {
				return fmt.Errorf("natsjs: encode %s/%d: %w", r.Stream, r.Version, err)
			}
			records = append(records, outbox.Record{
				Stream: r.Stream,
				Key:    eventID(r.Stream, r.Version),
				Type:   eventRecordType + r.Type,
				Body:   body,
			})
		}
		return ob.WriteTx(ctx, tx, records...)
	}
}

// eventID is an event's identity: its stream and version.
func eventID(stream string, version int64) string {
	return stream + "/" + strconv.FormatInt(version, 10)
}

// checkSubjectSuffix says why s cannot follow a prefix in a subject.
func checkSubjectSuffix(s string) error {
	for _, tok := range strings.Split(s, ".") {
		if err := checkToken(tok); err != nil {
			return err
		}
	}
	return nil
}

// EventSink publishes stored events to JetStream for an outbox relay:
// pass its Deliver to outbox.NewRelay. The relay reads the records
// RecordEvents wrote after their transactions commit, from a durable
// checkpoint of its own, in order per stream and never skipping one that
// commits late with a lower position (see the outbox package), and
// Deliver returns only once the server stored the event. An event is
// therefore published after its append commits, whatever crashes
// between; one published again — the relay crashed between the server's
// ack and its checkpoint — is de-duplicated by the server under its
// Nats-Msg-Id, stream and version, within the stream's duplicate window.
type EventSink struct {
	js     jetstream.JetStream
	prefix string
	stream string

	stored, duplicates atomic.Int64
}

// NewEventSink returns a sink publishing under prefix. Like NewPublisher,
// it checks the prefix and that a stream stores every subject under it,
// asking the server, so that an unreachable server is an error before
// any relay runs.
func NewEventSink(ctx context.Context, js jetstream.JetStream, prefix string) (*EventSink, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: NewEventSink: nil JetStream", ErrInvalidOption)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	s, err := streamFor(ctx, js, prefix)
	if err != nil {
		return nil, err
	}
	return &EventSink{js: js, prefix: prefix, stream: s.CachedInfo().Config.Name}, nil
}

// Deliver publishes one outbox message written by RecordEvents and waits
// for the server's ack; it is an outbox.Deliver. The message is a
// CloudEvent in the binding's binary content mode: the body is the
// event's JSON as RecordEvents encoded it, and the ce- headers say
// ce-id <stream>/<version>, ce-source SourceEventStore, ce-type the
// registered type name, ce-subject the stream, ce-time when it was
// appended (see CloudEvent), beside the Passage- headers. Records that
// RecordEvents did not write (an outbox shared with other sinks' writers)
// are passed over: nil, nothing published.
func (s *EventSink) Deliver(ctx context.Context, m outbox.Message) error {
	typ, ok := strings.CutPrefix(m.Type, eventRecordType)
	if !ok {
		return nil
	}
	version := m.Key[strings.LastIndexByte(m.Key, '/')+1:]
	msg := nats.NewMsg(s.prefix + "." + typ)
	msg.Data = m.Body
	msg.Header.Set(jetstream.MsgIDHeader, m.Key)
	msg.Header.Set(HeaderStream, m.Stream)
	msg.Header.Set(HeaderVersion, version)
	msg.Header.Set(HeaderType, typ)
	msg.Header.Set(HeaderRecordedAt, m.RecordedAt.UTC().Format(time.RFC3339Nano))
	CloudEvent{ID: m.Key, Source: SourceEventStore, Type: typ, Subject: m.Stream, Time: m.RecordedAt}.SetHeaders(msg.Header)
	ack, err := s.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(s.stream))
	if err != nil {
		return fmt.Errorf("natsjs: publish %s to %s on stream %s %s: %w", m.Key, msg.Subject, s.stream, where(s.js.Conn()), err)
	}
	if ack.Duplicate {
		s.duplicates.Add(1)
	} else {
		s.stored.Add(1)
	}
	return nil
}

// Stats returns the sink's counters: events stored, and events the server
// had already and did not store again.
func (s *EventSink) Stats() PublisherStats {
	return PublisherStats{Stored: s.stored.Load(), Duplicates: s.duplicates.Load()}
}
