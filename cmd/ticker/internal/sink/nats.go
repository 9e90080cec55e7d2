package sink

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/natsjs"
)

// NATS sink defaults and bounds.
const (
	// DefaultNATSPrefix is the subject prefix when NATSConfig.Prefix is
	// empty.
	DefaultNATSPrefix = "passage"
	// NATSPublishTimeout bounds one Send: the wait for the server's ack,
	// as a webhook's client bounds a request. What it cuts short is a
	// refusal, published again later under the same Nats-Msg-Id.
	NATSPublishTimeout = 10 * time.Second
	// natsConnectTimeout bounds the first connection, so an unreachable
	// server is an error at start rather than a wait.
	natsConnectTimeout = 5 * time.Second
)

// HeaderNATSEvent carries a record's type on NATS, as X-Passage-Event
// does on a webhook.
const HeaderNATSEvent = "Passage-Event"

// NATSConfig configures a NATS sink. Zero fields take the defaults given.
type NATSConfig struct {
	// URL is the server: nats://, tls://, ws:// or wss://, several
	// comma-separated for a cluster. Required.
	URL string
	// Prefix is the first tokens of every subject the sink publishes to
	// (see NATSSubject). Default DefaultNATSPrefix.
	Prefix string
	// Stream is the JetStream stream storing <Prefix>.>, created with
	// Window when it does not exist. Default natsjs.StreamName(Prefix).
	Stream string
	// Window is the least duplicate window the stream must have: a
	// stream created is given it, an existing one with less is refused
	// (natsjs.ErrDuplicateWindow), since a record published again after
	// its window would be stored twice. Required.
	Window time.Duration
}

// NATS publishes records to a NATS JetStream stream, one message per
// Send. Like Webhook it does not retry: the outbox's relay retries a
// refusal with backoff, and keeps each stream's records in order. It is
// safe for concurrent use; Close closes its connection.
type NATS struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	prefix string
	stream string
	shown  string // the URL without credentials

	stored, duplicates atomic.Int64
}

// NATSStats counts what a NATS sink's acknowledged publishes did.
type NATSStats struct {
	// Stored counts the records the server stored, Duplicates those it
	// had already under their Nats-Msg-Id and did not store again.
	Stored, Duplicates int64
}

// CheckNATS checks what of cfg needs no server — the URL's form, the
// prefix, the stream's name, the window — and returns cfg with its
// defaults filled in. Its errors wrap ErrBadNATSConfig.
func CheckNATS(cfg NATSConfig) (NATSConfig, error) {
	if _, err := RedactNATSURL(cfg.URL); err != nil {
		return cfg, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultNATSPrefix
	}
	// natsjs's check, the one every publisher and consumer of the
	// prefix makes, in the words of a configuration error.
	var bad *natsjs.PrefixError
	if errors.As(natsjs.CheckPrefix(cfg.Prefix), &bad) {
		return cfg, fmt.Errorf("%w: subject prefix %q: %s", ErrBadNATSConfig, bad.Prefix, bad.Reason)
	}
	if cfg.Stream == "" {
		cfg.Stream = natsjs.StreamName(cfg.Prefix)
	}
	if strings.ContainsAny(cfg.Stream, ".*> \t\r\n/\\") || !printable(cfg.Stream) {
		return cfg, fmt.Errorf("%w: stream name %q: JetStream names hold no dot, wildcard, white space or slash", ErrBadNATSConfig, cfg.Stream)
	}
	if cfg.Window <= 0 {
		return cfg, fmt.Errorf("%w: duplicate window %v must be positive", ErrBadNATSConfig, cfg.Window)
	}
	return cfg, nil
}

// NewNATS checks cfg (CheckNATS), connects to the server and creates or
// checks the stream (natsjs.EnsureStream): an unreachable server, a
// server without JetStream, a stream of that name that does not store
// every subject under the prefix or that keeps message ids for less
// than cfg.Window, is an error here, before anything is published.
func NewNATS(ctx context.Context, cfg NATSConfig) (*NATS, error) {
	cfg, err := CheckNATS(cfg)
	if err != nil {
		return nil, err
	}
	shown, _ := RedactNATSURL(cfg.URL) // checked by CheckNATS
	nc, err := nats.Connect(cfg.URL,
		nats.Name("passage ticker"),
		nats.Timeout(natsConnectTimeout),
		// Once connected, keep trying: a server that goes away makes
		// publishes fail, which the relay retries until it is back.
		nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("sink: NATS %s: connect: %w", shown, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("sink: NATS %s: %w", shown, err)
	}
	if _, err := natsjs.EnsureStream(ctx, js, cfg.Stream, cfg.Prefix, natsjs.WithDuplicateWindow(cfg.Window)); err != nil {
		nc.Close()
		return nil, fmt.Errorf("sink: NATS %s: %w", shown, err)
	}
	return &NATS{nc: nc, js: js, prefix: cfg.Prefix, stream: cfg.Stream, shown: shown}, nil
}

// URL returns the server's URL without credentials.
func (n *NATS) URL() string { return n.shown }

// Stream returns the name of the stream the records are stored on.
func (n *NATS) Stream() string { return n.stream }

// Prefix returns the subjects' prefix.
func (n *NATS) Prefix() string { return n.prefix }

// Stats returns the sink's counts since it was made.
func (n *NATS) Stats() NATSStats {
	return NATSStats{Stored: n.stored.Load(), Duplicates: n.duplicates.Load()}
}

// Close closes the connection. Sends after it fail.
func (n *NATS) Close() { n.nc.Close() }

// Send publishes one record and returns once the server acknowledged
// storing it, as a CloudEvent in the NATS binding's binary content mode:
// the body is the record's data as stored, its attributes are ce-
// headers (see [Event]), laid out by natsjs (natsjs.EncodeRecord): a
// boundary or a skip report on <prefix>.<unit> or <prefix>.skipped.<unit>,
// as natsjs.Encode would publish the event, so that a natsjs.Consumer
// reads it as the typed event; a schedule's run or skipped slots on
// <prefix>.schedule.<name> (NATSSubject). Either carries key as
// Nats-Msg-Id (natsjs.MsgID; for time, natsjs's event ID, which is the
// same string) and typ as Passage-Event. An ack that
// reports a duplicate — the server has that id within the stream's
// window, from an earlier Send whose ack was lost or whose relay died
// before its checkpoint — is a delivery too. No ack within
// NATSPublishTimeout, or a refusal, is an error.
func (n *NATS) Send(ctx context.Context, key, typ string, body []byte) error {
	msg, err := natsMsg(n.prefix, key, typ, body)
	if err != nil {
		return fmt.Errorf("sink: NATS %s: %s: %w", n.shown, key, err)
	}
	msg.Header.Set(HeaderNATSEvent, typ)
	ctx, cancel := context.WithTimeout(ctx, NATSPublishTimeout)
	defer cancel()
	// ExpectStream: stored on the stream NewNATS checked, whose window
	// de-duplicates, not on another that came to claim the subjects.
	ack, err := n.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(n.stream))
	if err != nil {
		return fmt.Errorf("sink: NATS %s: publish %s to %s on stream %s: %w", n.shown, key, msg.Subject, n.stream, err)
	}
	if ack.Duplicate {
		n.duplicates.Add(1)
	} else {
		n.stored.Add(1)
	}
	return nil
}

// natsMsg is the message of a record under prefix, without its
// Passage-Event header. The record's key and type must be its event's.
func natsMsg(prefix, key, typ string, body []byte) (*nats.Msg, error) {
	ev, err := storedEvent(typ, body)
	if err != nil {
		return nil, err
	}
	if ev.ID != key || ev.Type != typ {
		return nil, fmt.Errorf("the record's key %q and type %s are not its event's, %q and %s", key, typ, ev.ID, ev.Type)
	}
	return encodeEvent(prefix, ev)
}

// storedEvent is the envelope of a stored record of type typ: its body,
// or, for a record stored before the envelope, the envelope made of it
// (envelopeOf). A type natsjs lays out no subject for is refused first,
// whatever the body.
func storedEvent(typ string, body []byte) (Event, error) {
	if err := natsjs.CheckRecordType(typ); err != nil {
		return Event{}, err
	}
	body, err := envelopeOf(typ, body)
	if err != nil {
		return Event{}, err
	}
	ev, _, err := readEvent(body)
	return ev, err
}

// encodeEvent is the message natsjs makes of an envelope: its attributes
// and its data, as they are (natsjs.EncodeRecord).
func encodeEvent(prefix string, ev Event) (*nats.Msg, error) {
	at, err := time.Parse(time.RFC3339Nano, ev.Time)
	if err != nil {
		return nil, fmt.Errorf("a %s record whose time %q is no RFC 3339 instant", ev.Type, ev.Time)
	}
	ce := natsjs.CloudEvent{ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject, Time: at}
	return natsjs.EncodeRecord(prefix, ce, ev.Data)
}

// NATSSubject is where a record of type typ goes under prefix, read from
// its body (its envelope, or its flat JSON of before), as natsjs lays the
// records out (natsjs.EncodeRecord):
//
//	<prefix>.<unit>                    a boundary (MinuteHasPassed, …): passage.minute
//	<prefix>.skipped.<unit>            a TicksSkipped report: passage.skipped.minute
//	<prefix>.schedule.<name>           a ScheduleRun: passage.schedule.nightly-report
//	<prefix>.schedule.<name>.skipped   a SlotsSkipped report
//
// A natsjs.Consumer of the prefix reads the passage of time, and passes
// the schedules' records by; <prefix>.schedule.* takes every run. A
// schedule's name becomes one token: ASCII letters, digits, '-' and '_'
// as they are, every other byte as %XX ("billing.eu" is billing%2Eeu),
// since a dot, a wildcard or white space would change the subject's
// meaning.
func NATSSubject(prefix, typ string, body []byte) (string, error) {
	ev, err := storedEvent(typ, body)
	if err != nil {
		return "", err
	}
	msg, err := encodeEvent(prefix, ev)
	if err != nil {
		return "", err
	}
	return msg.Subject, nil
}

// NATSMsgID is the Nats-Msg-Id of a record's key: natsjs.MsgID, the key
// itself unless a header cannot carry it as it is.
func NATSMsgID(key string) string { return natsjs.MsgID(key) }

// NATSStreamName is the stream a prefix's records go to by default:
// natsjs.StreamName, passage is PASSAGE, acme.time ACME_TIME.
func NATSStreamName(prefix string) string { return natsjs.StreamName(prefix) }

// RedactNATSURL checks a NATS URL (servers comma-separated) and returns it
// without credentials: a NATS URL's user part may be a token
// (nats://s3cret@host), so all of it is hidden, not only a password.
func RedactNATSURL(raw string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return "", fmt.Errorf("%w: empty URL (want nats://host:4222)", ErrBadNATSConfig)
	}
	var shown []string
	for s := range strings.SplitSeq(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err == nil && (u.Host == "" || u.Hostname() == "") {
			err = errors.New("no host")
		}
		if err == nil {
			switch u.Scheme {
			case "nats", "tls", "ws", "wss":
			default:
				err = fmt.Errorf("scheme %q is not nats, tls, ws or wss", u.Scheme)
			}
		}
		if err != nil {
			return "", fmt.Errorf("%w: %q: %v (want nats://host:4222, servers comma-separated)", ErrBadNATSConfig, redactUserinfo(s), err)
		}
		user := ""
		if u.User != nil {
			user = "…@"
		}
		shown = append(shown, u.Scheme+"://"+user+u.Host+u.EscapedPath())
	}
	return strings.Join(shown, ","), nil
}

// redactUserinfo hides what lies between "://" and "@" in a URL that did
// not parse, for its error.
func redactUserinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		return s[:i+3] + "…" + rest[at:]
	}
	return s
}

// printable reports whether s holds no ASCII control character.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}
