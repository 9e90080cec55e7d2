package natsjs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Every event passage publishes is a CloudEvents 1.0 event (see
// docs/events.md). On NATS it travels in the binary content mode of the
// CloudEvents NATS protocol binding: the message's body is the event's
// data, and each context attribute is a header of its own, ce-<name>.
// A CloudEvents SDK reads such a message as the event (cloudevents/sdk-go's
// JetStream binding takes a ce-specversion header for binary mode), and
// so does a Consumer.
const (
	// SpecVersion is the CloudEvents version of every event passage
	// publishes.
	SpecVersion = "1.0"
	// DataContentType is every event's datacontenttype: its data is JSON.
	DataContentType = "application/json"

	// SourceTick is the source of the passage of time: boundaries and the
	// ticker's skip reports.
	SourceTick = "/passage/tick"
	// SourceSchedule is the source of a schedule's runs and skipped slots.
	SourceSchedule = "/passage/schedule"
	// SourceEventStore is the source of the events an eventstore stored
	// (RecordEvents, EventSink).
	SourceEventStore = "/passage/eventstore"

	// TypeTicksSkipped is the CloudEvents type of a ticker's skip report;
	// a boundary's type is the name of its tick event (MinuteHasPassed,
	// …), a stored event's the name its type is registered under.
	TypeTicksSkipped = "TicksSkipped"
	// TypeScheduleRun is the CloudEvents type of a stored schedule's run,
	// and TypeSlotsSkipped of its slots a catch-up policy did not fire
	// (schedule.Run, schedule.SlotsSkipped), which the ticker binary
	// publishes beside time (EncodeRecord).
	TypeScheduleRun  = "ScheduleRun"
	TypeSlotsSkipped = "SlotsSkipped"
)

// The headers of the CloudEvents attributes, as the NATS binding names
// them: ce- and the attribute's name.
const (
	HeaderCESpecVersion     = "ce-specversion"
	HeaderCEID              = "ce-id"
	HeaderCESource          = "ce-source"
	HeaderCEType            = "ce-type"
	HeaderCESubject         = "ce-subject"
	HeaderCETime            = "ce-time"
	HeaderCEDataContentType = "ce-datacontenttype"
)

// CloudEvent is the context of an event passage publishes, the attributes
// besides specversion and datacontenttype (always SpecVersion and
// DataContentType).
type CloudEvent struct {
	// ID is the event's identity, the one its Nats-Msg-Id, a webhook's
	// webhook-id and the outbox's key carry: minute/2026-11-26T12:01:00Z,
	// a slot id, <stream>/<version>.
	ID string
	// Source is SourceTick, SourceSchedule or SourceEventStore.
	Source string
	// Type names what happened: MinuteHasPassed, TicksSkipped,
	// ScheduleRun, a stored event's registered name.
	Type string
	// Subject is the stream the event is ordered in: a unit, a
	// schedule's name, an eventstore stream. Events of one source and
	// subject are published in order.
	Subject string
	// Time is the instant the event is about: the boundary, the slot,
	// the last skipped boundary or slot, when a stored event was
	// appended. It is written in UTC.
	Time time.Time
}

// FormatTime writes t as a CloudEvents Timestamp: RFC 3339 in UTC, with
// the fraction of a second only when there is one. (An offset with
// seconds, which passage keeps in the instants of data, is not RFC 3339.)
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// SetHeaders sets c's attributes on h as the binding maps them: each on
// ce-<name>, its value percent-encoded (space, '"', '%' and every byte
// outside printable ASCII as %XX), with ce-specversion SpecVersion and
// ce-datacontenttype DataContentType. An empty Subject sets no
// ce-subject.
func (c CloudEvent) SetHeaders(h nats.Header) {
	h.Set(HeaderCESpecVersion, SpecVersion)
	h.Set(HeaderCEID, percentEncode(c.ID))
	h.Set(HeaderCESource, percentEncode(c.Source))
	h.Set(HeaderCEType, percentEncode(c.Type))
	if c.Subject != "" {
		h.Set(HeaderCESubject, percentEncode(c.Subject))
	}
	h.Set(HeaderCETime, FormatTime(c.Time))
	h.Set(HeaderCEDataContentType, DataContentType)
}

// ceHeader returns the attribute name's value from h: the header found
// whatever its case (NATS header names are case-insensitive for the
// binding, nats.Header is not), unquoted when a publisher quoted it, and
// percent-decoded. ok is false when there is no such header.
func ceHeader(h nats.Header, name string) (value string, ok bool, err error) {
	raw, ok := h[name]
	if !ok {
		for k, v := range h {
			if strings.EqualFold(k, name) {
				raw, ok = v, true
				break
			}
		}
	}
	if !ok || len(raw) == 0 {
		return "", false, nil
	}
	v := raw[0]
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if v, err = strconv.Unquote(v); err != nil {
			return "", true, fmt.Errorf("%s: a quoted value that does not unquote: %w", name, err)
		}
	}
	v, err = percentDecode(v)
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", name, err)
	}
	return v, true, nil
}

// percentEncode encodes s as the binding asks of a header value.
func percentEncode(s string) string {
	return escape(s, func(_ int, c byte) bool { return c > ' ' && c < 0x7f && c != '"' && c != '%' })
}

// escape returns s with every byte keep refuses (keep is given its index)
// written as %XX, upper-case: s itself when keep takes every byte. The
// header values (percentEncode), the Nats-Msg-Id (MsgID) and a schedule's
// subject token (scheduleSubject) each escape what they cannot carry.
func escape(s string, keep func(i int, c byte) bool) string {
	i := 0
	for i < len(s) && keep(i, s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if keep(i, s[i]) {
			b.WriteByte(s[i])
			continue
		}
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// percentDecode undoes percentEncode (and lower-case hex digits, which
// the binding accepts).
func percentDecode(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("a %% without two hex digits at byte %d", i)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("a %% without two hex digits at byte %d", i)
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}
