package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
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
	// Window when it does not exist. Default NATSStreamName(Prefix).
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
	if err := checkPrefix(cfg.Prefix); err != nil {
		return cfg, err
	}
	if cfg.Stream == "" {
		cfg.Stream = NATSStreamName(cfg.Prefix)
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
// the body is the record's data, its attributes are ce- headers (see
// [Event]). A boundary or a skip report goes out as natsjs lays time out
// on a stream (natsjs.Encode): on <prefix>.<unit> or
// <prefix>.skipped.<unit>, rebuilt from the stored record, so that a
// natsjs.Consumer reads it as the typed event. A schedule's run or
// skipped slots goes to <prefix>.schedule.<name> (NATSSubject). Either
// carries key as Nats-Msg-Id (NATSMsgID; for time, natsjs's event ID,
// which is the same string) and typ as Passage-Event. An ack that
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
// Passage-Event header.
func natsMsg(prefix, key, typ string, body []byte) (*nats.Msg, error) {
	if err := hasSubject(typ); err != nil {
		return nil, err
	}
	body, err := envelopeOf(typ, body)
	if err != nil {
		return nil, err
	}
	ev, _, err := readEvent(body)
	if err != nil {
		return nil, err
	}
	if ev.ID != key || ev.Type != typ {
		return nil, fmt.Errorf("the record's key %q and type %s are not its event's, %q and %s", key, typ, ev.ID, ev.Type)
	}
	if isScheduleRecord(typ) {
		subject, err := scheduleSubject(prefix, typ, ev.Data)
		if err != nil {
			return nil, err
		}
		at, err := time.Parse(time.RFC3339Nano, ev.Time)
		if err != nil {
			return nil, fmt.Errorf("a %s record whose time %q is no RFC 3339 instant", typ, ev.Time)
		}
		msg := nats.NewMsg(subject)
		msg.Data = ev.Data
		msg.Header.Set(jetstream.MsgIDHeader, NATSMsgID(key))
		natsjs.CloudEvent{ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject, Time: at}.SetHeaders(msg.Header)
		return msg, nil
	}
	event, err := timeEvent(typ, body)
	if err != nil {
		return nil, err
	}
	msg, err := natsjs.Encode(prefix, event)
	if err != nil {
		return nil, err
	}
	// One identity and one shape: the outbox's key and natsjs's ID are
	// made the same way, and the record's data is what natsjs writes;
	// should they drift apart, a message no receiver expects is refused
	// here rather than published.
	if id := msg.Header.Get(jetstream.MsgIDHeader); id != NATSMsgID(key) {
		return nil, fmt.Errorf("the record's key %q is not its event's id %q", key, id)
	}
	if !bytes.Equal(msg.Data, ev.Data) {
		return nil, fmt.Errorf("the record's data %s is not natsjs's %s", ev.Data, msg.Data)
	}
	return msg, nil
}

// isScheduleRecord reports whether records of type typ are a schedule's,
// which go under <prefix>.schedule.
func isScheduleRecord(typ string) bool { return typ == TypeScheduleRun || typ == TypeSlotsSkipped }

// hasSubject refuses a record type the layout gives no subject.
func hasSubject(typ string) error {
	if !isScheduleRecord(typ) && typ != TypeTicksSkipped && !strings.HasSuffix(typ, "HasPassed") {
		return fmt.Errorf("record type %q has no subject", typ)
	}
	return nil
}

// timeEvent rebuilds from a stored record body ([Record]: its envelope,
// or its flat JSON of before) the tick event or tick.TicksSkipped it was
// made of. Record's instants are lossless, so the event is the one the
// ticker decided, offsets with seconds included.
func timeEvent(typ string, body []byte) (any, error) {
	if err := hasSubject(typ); err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("a %s record whose body is not JSON: %w", typ, err)
	}
	u, err := tick.ParseUnit(string(r.Unit))
	if err != nil || u != r.Unit {
		return nil, fmt.Errorf("a %s record without a unit of time (unit %q)", typ, r.Unit)
	}
	if typ == TypeTicksSkipped {
		if r.From == nil || r.To == nil {
			return nil, fmt.Errorf("a TicksSkipped record without from or to")
		}
		return tick.TicksSkipped{Unit: u, From: r.From.Time, To: r.To.Time, Count: r.Count, Policy: r.Policy, EmittedAt: r.EmittedAt.Time}, nil
	}
	if r.Boundary == nil {
		return nil, fmt.Errorf("a %s record without a boundary", typ)
	}
	p := tick.Passage{At: r.Boundary.Time, EmittedAt: r.EmittedAt.Time, CatchUp: r.CatchUp}
	if r.Previous != nil {
		p.Since = r.Previous.Time
	}
	ev, err := tick.NewEvent(u, p)
	if err != nil {
		return nil, fmt.Errorf("a %s record: %w", typ, err)
	}
	if name := reflect.TypeOf(ev).Name(); name != typ {
		return nil, fmt.Errorf("a %s record of unit %s, whose boundaries are %s", typ, u, name)
	}
	return ev, nil
}

// NATSSubject is where a record of type typ goes under prefix, read from
// its body (its envelope, or its flat JSON of before):
//
//	<prefix>.<unit>                    a boundary (MinuteHasPassed, …): passage.minute
//	<prefix>.skipped.<unit>            a TicksSkipped report: passage.skipped.minute
//	<prefix>.schedule.<name>           a ScheduleRun: passage.schedule.nightly-report
//	<prefix>.schedule.<name>.skipped   a SlotsSkipped report
//
// The passage of time is laid out by natsjs (natsjs.Encode), so a
// natsjs.Consumer of the prefix reads it, and passes the schedules'
// records by; <prefix>.schedule.* takes every run. A schedule's name
// becomes one token: ASCII letters, digits, '-' and '_' as they are,
// every other byte as %XX ("billing.eu" is billing%2Eeu), since a dot, a
// wildcard or white space would change the subject's meaning.
func NATSSubject(prefix, typ string, body []byte) (string, error) {
	if err := hasSubject(typ); err != nil {
		return "", err
	}
	body, err := envelopeOf(typ, body)
	if err != nil {
		return "", err
	}
	if !isScheduleRecord(typ) {
		event, err := timeEvent(typ, body)
		if err != nil {
			return "", err
		}
		msg, err := natsjs.Encode(prefix, event)
		if err != nil {
			return "", err
		}
		return msg.Subject, nil
	}
	ev, _, err := readEvent(body)
	if err != nil {
		return "", err
	}
	return scheduleSubject(prefix, typ, ev.Data)
}

// scheduleSubject is the subject of a schedule's record whose data is
// data.
func scheduleSubject(prefix, typ string, data []byte) (string, error) {
	var head struct {
		Schedule string `json:"schedule"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", fmt.Errorf("a %s record whose data is not JSON: %w", typ, err)
	}
	if head.Schedule == "" {
		return "", fmt.Errorf("a %s record without a schedule", typ)
	}
	subject := prefix + ".schedule." + subjectToken(head.Schedule)
	if typ == TypeSlotsSkipped {
		subject += ".skipped"
	}
	return subject, nil
}

// subjectToken escapes name into one subject token.
func subjectToken(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// NATSMsgID is the Nats-Msg-Id of a record's key: the key itself, unless
// it holds what a header cannot carry as it is — a control character
// (a schedule's name may hold a line break), a space at either end,
// which header parsing trims — or a '%'. Such a key is sent with those
// bytes as %XX. Keys sent as they are hold no '%' and escaped ones do,
// so two keys never share an id.
func NATSMsgID(key string) string {
	plain := !strings.Contains(key, "%") && strings.TrimSpace(key) == key
	for i := 0; plain && i < len(key); i++ {
		plain = key[i] >= 0x20 && key[i] != 0x7f
	}
	if plain {
		return key
	}
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		edge := (i == 0 || i == len(key)-1) && c == ' '
		if c < 0x20 || c == 0x7f || c == '%' || edge {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// NATSStreamName is the stream a prefix's records go to by default: the
// prefix in capitals, dots (and slashes, which a stream's name cannot
// hold either) as underscores: passage is PASSAGE, acme.time ACME_TIME.
func NATSStreamName(prefix string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "/", "_", "\\", "_").Replace(prefix))
}

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

// checkPrefix refuses a prefix that is not a plain subject: a wildcard
// would make the sink's subjects patterns (and the stream's filter,
// <prefix>.>, take other publishers' messages); white space, a control
// character or an empty token make the server refuse every publish,
// long after the ticker started; a '$' first is the server's own
// ($JS, $SYS).
func checkPrefix(prefix string) error {
	if strings.HasPrefix(prefix, "$") {
		return fmt.Errorf("%w: subject prefix %q: subjects starting with $ are the server's ($JS, $SYS, $KV)", ErrBadNATSConfig, prefix)
	}
	for i, tok := range strings.Split(prefix, ".") {
		if tok == "" {
			return fmt.Errorf("%w: subject prefix %q: token %d is empty (a leading, trailing or doubled dot)", ErrBadNATSConfig, prefix, i+1)
		}
		if j := strings.IndexAny(tok, "*>"); j >= 0 {
			return fmt.Errorf("%w: subject prefix %q: token %q holds the wildcard %q: a prefix names subjects, it does not match them", ErrBadNATSConfig, prefix, tok, tok[j])
		}
		if strings.ContainsAny(tok, " \t\r\n") || !printable(tok) {
			return fmt.Errorf("%w: subject prefix %q: token %q holds white space or a control character", ErrBadNATSConfig, prefix, tok)
		}
	}
	return nil
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
