package natsjs

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

// A Consumer hands its handlers only what is the event its subject names.
// decode reads a message in four steps, each refusing with a PoisonError
// of its own reason:
//
//  1. route: the subject names a known unit's boundary or skip report
//     (deeper subjects are someone else's: errNotTime);
//  2. parse, by the message's shape (shapeOf, by its headers): the body
//     holds every field of that event. Two shapes are read: the
//     CloudEvent Encode writes since issue 34 (ce- headers, the data's
//     snake_case JSON as the body), and, for one release, tick's JSON
//     with no ce- header, which publishers wrote before;
//  3. check, whatever the shape: the instants are boundaries of the unit,
//     the fields agree with each other, and a CloudEvent's attributes
//     with its data;
//  4. the Nats-Msg-Id is the id the event makes.

// PoisonReason says why a Consumer terminated a message instead of handing
// it to its handlers. The set is fixed (PoisonReasons): it is the key of
// ConsumerStats.Poison and the "reason" attribute of the consumer's
// poison counter.
type PoisonReason string

// The reasons a message is poison, in the order decode checks them: a
// message is reported with the first that applies. A CloudEvent's
// attributes that its data decides (ce-id, ce-subject, ce-time) are
// checked after its data, each with the reason of what it contradicts.
const (
	// PoisonSubject: the subject is not one the layout gives time (a skip
	// report's subject with tokens after its unit), a skip report's (or a
	// CloudEvent's data's) unit is not its subject's, or a CloudEvent's
	// ce-type is not the type its subject carries.
	PoisonSubject PoisonReason = "subject"
	// PoisonUnknownUnit: the subject's unit, <prefix>.<unit> or
	// <prefix>.skipped.<unit>, is none of tick.Units().
	PoisonUnknownUnit PoisonReason = "unknown-unit"
	// PoisonTooLarge: the body is longer than 64 KiB, far more than any
	// event of the layout takes (a boundary takes about 150 bytes).
	PoisonTooLarge PoisonReason = "too-large"
	// PoisonMalformed: the body is not a JSON object of the event's fields
	// (not JSON, a field of the wrong type, an instant that does not
	// parse), or a CloudEvent's ce-specversion is not 1.0, its
	// ce-datacontenttype not application/json, or an attribute does not
	// decode.
	PoisonMalformed PoisonReason = "malformed"
	// PoisonMissingField: a field of the event is absent, null or the zero
	// instant: a boundary's At, Since, EmittedAt and CatchUp (a
	// CloudEvent's unit, boundary, previous, emitted_at, catch_up); a skip
	// report's Unit, From, To, Count, Policy and EmittedAt (unit, from,
	// to, count, policy, emitted_at); a CloudEvent's ce-id, ce-source,
	// ce-type, ce-subject, ce-time or ce-datacontenttype.
	PoisonMissingField PoisonReason = "missing-field"
	// PoisonNotABoundary: an instant that should be a boundary of the unit
	// (a boundary's At, a skip report's From and To) is not one in the
	// offset it carries.
	PoisonNotABoundary PoisonReason = "not-a-boundary"
	// PoisonInconsistent: the fields disagree: Since not before At, an
	// emission before the boundary (or before a skip report's To), From
	// after To, a Count that cannot be From..To's, a policy tick does not
	// have; a CloudEvent whose ce-source is not SourceTick, whose
	// ce-subject is not its unit or whose ce-time is not its boundary
	// (a skip report's To).
	PoisonInconsistent PoisonReason = "inconsistent"
	// PoisonMessageID: the Nats-Msg-Id (or a CloudEvent's ce-id) is
	// missing or not the id the body makes (a boundary's ID, unit and
	// boundary; a skip report's skipped/<unit>/<from>..<to>): the server
	// de-duplicates by it, so a body under another's id is not the event
	// the id stands for.
	PoisonMessageID PoisonReason = "message-id"
)

// PoisonReasons lists every PoisonReason, in the order decode checks them.
func PoisonReasons() []PoisonReason { return slices.Clone(reasonOrder[:]) }

// PoisonError is why a Consumer terminated a message: it is not the event
// its subject names. It wraps ErrUndecodable. Its text is bounded whatever
// the message held (a megabyte in a field is not quoted back), so that it
// can be logged.
type PoisonError struct {
	// Reason is the first check the message failed.
	Reason PoisonReason
	// Subject is the message's subject, cut to 256 bytes.
	Subject string
	// Detail says what was wrong, cut to 512 bytes.
	Detail string
}

// Error implements error.
func (e *PoisonError) Error() string {
	return fmt.Sprintf("%v: %s: %s: %s", ErrUndecodable, e.Subject, e.Reason, e.Detail)
}

// Unwrap returns ErrUndecodable.
func (e *PoisonError) Unwrap() error { return ErrUndecodable }

// The bounds of what a poison message puts in an error or a log record.
const (
	maxBody       = 64 << 10 // PoisonTooLarge beyond
	maxSubjectLen = 256
	maxDetailLen  = 512
	maxExcerpt    = 1 << 10 // of the body, in the log record
)

func poison(reason PoisonReason, subject, format string, args ...any) *PoisonError {
	return &PoisonError{Reason: reason, Subject: cut(subject, maxSubjectLen), Detail: cut(fmt.Sprintf(format, args...), maxDetailLen)}
}

// cut returns s's first n bytes at most, not splitting a character, with
// "…" when something was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// excerpt is what a log record shows of a body: its first maxExcerpt
// bytes.
func excerpt(data []byte) string { return cut(string(data), maxExcerpt) }

// errNotTime is decode's answer for a subject under the prefix that
// holds no passage of time: one of more than one token that is not a
// skip report's, such as the schedule runs "ticker run --nats" publishes
// to <prefix>.schedule.<name> on the same stream. A Consumer acks it
// and passes it by; it is not poison, only someone else's.
var errNotTime = errors.New("natsjs: not the passage of time")

// wire is a message as decode reads it.
type wire struct {
	subject string
	header  nats.Header // Nats-Msg-Id; a second shape's headers
	data    []byte
}

// route is what a subject under prefix names: a boundary of unit, or
// (skipped) a skip report of unit.
type route struct {
	unit    tick.Unit
	skipped bool
}

// decode turns a message published under prefix back into the event it
// is, a tick.Event (tick.MinuteHasPassed for <prefix>.minute, …) or a
// tick.TicksSkipped, or says why it is not: errNotTime for a deeper
// subject, a *PoisonError otherwise.
func decode(prefix string, m wire) (any, error) {
	r, err := routeOf(prefix, m.subject)
	if err != nil {
		return nil, err
	}
	if len(m.data) > maxBody {
		return nil, poison(PoisonTooLarge, m.subject, "a body of %d bytes, more than %d", len(m.data), maxBody)
	}
	sh, err := shapeOf(r, m.header)
	if err != nil {
		return nil, asPoison(err, m.subject)
	}
	var (
		ev any
		id string
	)
	if r.skipped {
		s, err := sh.skipped(r, m.data)
		if err != nil {
			return nil, asPoison(err, m.subject)
		}
		if err := checkSkipped(r.unit, s); err != nil {
			return nil, asPoison(err, m.subject)
		}
		ev, id = s, SkippedID(s)
	} else {
		p, err := sh.passage(r, m.data)
		if err != nil {
			return nil, asPoison(err, m.subject)
		}
		if err := checkPassage(r.unit, p); err != nil {
			return nil, asPoison(err, m.subject)
		}
		e, err := tick.NewEvent(r.unit, p)
		if err != nil {
			// routeOf let only tick.Units() through.
			return nil, poison(PoisonUnknownUnit, m.subject, "%v", err)
		}
		ev, id = e, e.ID()
	}
	if err := sh.agrees(r, ev, id); err != nil {
		return nil, asPoison(err, m.subject)
	}
	got := m.header.Get(nats.MsgIdHdr)
	if got != id {
		if got == "" {
			return nil, poison(PoisonMessageID, m.subject, "no %s; the event's id is %s", nats.MsgIdHdr, id)
		}
		return nil, poison(PoisonMessageID, m.subject, "%s %q is not the event's id %s", nats.MsgIdHdr, cut(got, 128), id)
	}
	return ev, nil
}

// routeOf reads what subject names under prefix.
func routeOf(prefix, subject string) (route, error) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return route{}, poison(PoisonSubject, subject, "not under %s", prefix)
	}
	unit, skipped := strings.CutPrefix(rest, skippedToken+".")
	switch {
	case !skipped && strings.Contains(rest, "."):
		return route{}, fmt.Errorf("%w: %s", errNotTime, cut(subject, maxSubjectLen))
	case skipped && strings.Contains(unit, "."):
		return route{}, poison(PoisonSubject, subject, "tokens after the unit of a skip report")
	case !slices.Contains(tick.Units(), tick.Unit(unit)):
		return route{}, poison(PoisonUnknownUnit, subject, "%q is none of tick's units %v", cut(unit, 64), tick.Units())
	}
	return route{unit: tick.Unit(unit), skipped: skipped}, nil
}

// shape is one way the layout's events are written in a message: it
// reads every field, refusing a body that lacks one (PoisonMalformed,
// PoisonMissingField), and leaves what the values mean to checkPassage
// and checkSkipped, which every shape shares; agrees then checks what
// the shape says besides the body (a CloudEvent's attributes) against
// the event the body made, whose id is id.
type shape interface {
	passage(r route, data []byte) (tick.Passage, error)
	skipped(r route, data []byte) (tick.TicksSkipped, error)
	agrees(r route, ev any, id string) error
}

// shapeOf picks the shape of a message by its headers: a ce-specversion
// makes it a CloudEvent, whose attributes that need no body are checked
// here (its version, its data's content type, its type against the
// subject's); without one it is tick's JSON, the shape of publishers
// before issue 34, read for one release.
func shapeOf(r route, h nats.Header) (shape, error) {
	version, ok, err := ceHeader(h, HeaderCESpecVersion)
	switch {
	case err != nil:
		return nil, &PoisonError{Reason: PoisonMalformed, Detail: err.Error()}
	case !ok:
		return tickJSON{}, nil
	case version != SpecVersion:
		return nil, &PoisonError{Reason: PoisonMalformed, Detail: fmt.Sprintf("%s %q: this consumer reads CloudEvents %s", HeaderCESpecVersion, cut(version, 64), SpecVersion)}
	}
	ce := cloudEvent{attrs: map[string]string{}}
	var absent []string
	for _, name := range []string{HeaderCEID, HeaderCESource, HeaderCEType, HeaderCESubject, HeaderCETime, HeaderCEDataContentType} {
		v, ok, err := ceHeader(h, name)
		if err != nil {
			return nil, &PoisonError{Reason: PoisonMalformed, Detail: err.Error()}
		}
		if !ok || v == "" {
			absent = append(absent, name)
		}
		ce.attrs[name] = v
	}
	if len(absent) > 0 {
		return nil, &PoisonError{Reason: PoisonMissingField, Detail: "no " + strings.Join(absent, ", ")}
	}
	if ct := ce.attrs[HeaderCEDataContentType]; ct != DataContentType {
		return nil, &PoisonError{Reason: PoisonMalformed, Detail: fmt.Sprintf("%s %q: the data of time is %s", HeaderCEDataContentType, cut(ct, 64), DataContentType)}
	}
	want := TypeTicksSkipped
	if !r.skipped {
		e, err := tick.NewEvent(r.unit, tick.Passage{})
		if err != nil {
			return nil, &PoisonError{Reason: PoisonUnknownUnit, Detail: err.Error()}
		}
		want = reflect.TypeOf(e).Name()
	}
	if got := ce.attrs[HeaderCEType]; got != want {
		return nil, &PoisonError{Reason: PoisonSubject, Detail: fmt.Sprintf("%s %q on the subject of %s", HeaderCEType, cut(got, 64), want)}
	}
	return ce, nil
}

// tickJSON is tick's JSON of the events, as Encode wrote them before
// issue 34: the fields encoding/json names after the structs, the
// instants as tick.JSONTime. Each field is a pointer so that an absent
// one (or JSON null) is told apart from a false or zero one.
type tickJSON struct{}

func (tickJSON) passage(_ route, data []byte) (tick.Passage, error) {
	var v struct {
		At, Since, EmittedAt *tick.JSONTime
		CatchUp              *bool
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return tick.Passage{}, &PoisonError{Reason: PoisonMalformed, Detail: "not the JSON of a boundary: " + err.Error()}
	}
	if err := missing("At", present(v.At), "Since", present(v.Since), "EmittedAt", present(v.EmittedAt), "CatchUp", v.CatchUp != nil); err != nil {
		return tick.Passage{}, err
	}
	return tick.Passage{At: v.At.Time, Since: v.Since.Time, EmittedAt: v.EmittedAt.Time, CatchUp: *v.CatchUp}, nil
}

func (tickJSON) skipped(_ route, data []byte) (tick.TicksSkipped, error) {
	var v struct {
		Unit, Policy        *string
		From, To, EmittedAt *tick.JSONTime
		Count               *int64
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return tick.TicksSkipped{}, &PoisonError{Reason: PoisonMalformed, Detail: "not the JSON of a skip report: " + err.Error()}
	}
	if err := missing("Unit", v.Unit != nil, "From", present(v.From), "To", present(v.To), "Count", v.Count != nil, "Policy", v.Policy != nil, "EmittedAt", present(v.EmittedAt)); err != nil {
		return tick.TicksSkipped{}, err
	}
	return tick.TicksSkipped{Unit: tick.Unit(*v.Unit), From: v.From.Time, To: v.To.Time, Count: *v.Count, Policy: *v.Policy, EmittedAt: v.EmittedAt.Time}, nil
}

func (tickJSON) agrees(route, any, string) error { return nil }

// cloudEvent is a CloudEvent in the binary content mode, as Encode writes
// it: the data's JSON as the body (boundaryData, skippedData), the
// attributes in ce- headers (attrs, by header name, decoded).
type cloudEvent struct {
	attrs map[string]string
}

func (cloudEvent) passage(r route, data []byte) (tick.Passage, error) {
	var v struct {
		Unit                          *string
		Boundary, Previous, EmittedAt *tick.JSONTime
		CatchUp                       *bool
	}
	if err := unmarshalData(data, map[string]any{"unit": &v.Unit, "boundary": &v.Boundary, "previous": &v.Previous, "emitted_at": &v.EmittedAt, "catch_up": &v.CatchUp}); err != nil {
		return tick.Passage{}, &PoisonError{Reason: PoisonMalformed, Detail: "not the data of a boundary: " + err.Error()}
	}
	if err := missing("unit", v.Unit != nil, "boundary", present(v.Boundary), "previous", present(v.Previous), "emitted_at", present(v.EmittedAt), "catch_up", v.CatchUp != nil); err != nil {
		return tick.Passage{}, err
	}
	if err := sameUnit(r, *v.Unit, "a boundary"); err != nil {
		return tick.Passage{}, err
	}
	return tick.Passage{At: v.Boundary.Time, Since: v.Previous.Time, EmittedAt: v.EmittedAt.Time, CatchUp: *v.CatchUp}, nil
}

func (cloudEvent) skipped(r route, data []byte) (tick.TicksSkipped, error) {
	var v struct {
		Unit, Policy        *string
		From, To, EmittedAt *tick.JSONTime
		Count               *int64
	}
	if err := unmarshalData(data, map[string]any{"unit": &v.Unit, "from": &v.From, "to": &v.To, "count": &v.Count, "policy": &v.Policy, "emitted_at": &v.EmittedAt}); err != nil {
		return tick.TicksSkipped{}, &PoisonError{Reason: PoisonMalformed, Detail: "not the data of a skip report: " + err.Error()}
	}
	if err := missing("unit", v.Unit != nil, "from", present(v.From), "to", present(v.To), "count", v.Count != nil, "policy", v.Policy != nil, "emitted_at", present(v.EmittedAt)); err != nil {
		return tick.TicksSkipped{}, err
	}
	return tick.TicksSkipped{Unit: tick.Unit(*v.Unit), From: v.From.Time, To: v.To.Time, Count: *v.Count, Policy: *v.Policy, EmittedAt: v.EmittedAt.Time}, nil
}

// agrees checks the attributes the data decides: ce-id is the event's id,
// ce-source the source of time, ce-subject its unit, ce-time its
// boundary (a skip report's last skipped boundary).
func (c cloudEvent) agrees(r route, ev any, id string) error {
	at := time.Time{}
	switch e := ev.(type) {
	case tick.Event:
		p, _ := tick.PassageOf(e)
		at = p.At
	case tick.TicksSkipped:
		at = e.To
	}
	if got := c.attrs[HeaderCEID]; got != id {
		return &PoisonError{Reason: PoisonMessageID, Detail: fmt.Sprintf("%s %q is not the event's id %s", HeaderCEID, cut(got, 128), id)}
	}
	if got := c.attrs[HeaderCESource]; got != SourceTick {
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("%s %q: time comes from %s", HeaderCESource, cut(got, 128), SourceTick)}
	}
	if got := c.attrs[HeaderCESubject]; got != string(r.unit) {
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("%s %q is not its unit %s", HeaderCESubject, cut(got, 64), r.unit)}
	}
	got := c.attrs[HeaderCETime]
	t, err := time.Parse(time.RFC3339Nano, got)
	switch {
	case err != nil:
		return &PoisonError{Reason: PoisonMalformed, Detail: fmt.Sprintf("%s %q is no RFC 3339 instant", HeaderCETime, cut(got, 64))}
	case !t.Equal(at):
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("%s %s is not the instant the event is about, %s", HeaderCETime, cut(got, 64), FormatTime(at))}
	}
	return nil
}

// unmarshalData reads a CloudEvent's data object into fields by their
// exact names: encoding/json matches names without regard to case, and
// the data's names are snake_case, so that "Boundary" or "Unit" (a
// shape of another kind) is not taken for one of its fields.
func unmarshalData(data []byte, fields map[string]any) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		// JSON null: no field at all.
		return nil
	}
	for name, dst := range fields {
		b, ok := raw[name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(b, dst); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// sameUnit refuses a CloudEvent's data of another unit than its
// subject's.
func sameUnit(r route, unit, what string) error {
	if !slices.Contains(tick.Units(), tick.Unit(unit)) {
		return &PoisonError{Reason: PoisonUnknownUnit, Detail: fmt.Sprintf("%s of unit %q", what, cut(unit, 64))}
	}
	if tick.Unit(unit) != r.unit {
		return &PoisonError{Reason: PoisonSubject, Detail: fmt.Sprintf("%s of unit %s on the subject of %s", what, unit, r.unit)}
	}
	return nil
}

// present reports whether an instant was given: not absent, not null,
// not the zero time (0001-01-01T00:00:00Z, what a decoder that leaves
// missing fields zero makes of nothing).
func present(t *tick.JSONTime) bool { return t != nil && !t.IsZero() }

// missing takes pairs of a field's name and whether it was given, and
// names those that were not, or returns nil.
func missing(fields ...any) error {
	var absent []string
	for i := 0; i+1 < len(fields); i += 2 {
		if !fields[i+1].(bool) {
			absent = append(absent, fields[i].(string))
		}
	}
	if len(absent) == 0 {
		return nil
	}
	return &PoisonError{Reason: PoisonMissingField, Detail: "no " + strings.Join(absent, ", ")}
}

// asPoison fills in the subject of a shape's or a check's PoisonError,
// bounding its detail (a parse error may quote the whole field).
func asPoison(err error, subject string) error {
	var p *PoisonError
	if !errors.As(err, &p) {
		return poison(PoisonMalformed, subject, "%v", err)
	}
	return &PoisonError{Reason: p.Reason, Subject: cut(subject, maxSubjectLen), Detail: cut(p.Detail, maxDetailLen)}
}

// maxGap is the longest clock gap a period's start may fall in: where a
// zone moves its clock forward at midnight (America/Sao_Paulo until 2019,
// by an hour; Africa/Monrovia in 1972, by 44 min 30 s), the day begins at
// the first instant after the gap, which its own offset shows as 01:00.
const maxGap = 3 * time.Hour

// isBoundary reports whether t is a boundary of u in the zone it was
// emitted in. A message carries only the offset of each instant, not the
// zone's name, so the check is made in that offset by tick's own
// functions: t must be its own last boundary (tick.Previous). For day and
// longer units, whose boundary is a period's first instant, t may also
// come at most maxGap after its period's start in its offset: the first
// instant after a gap that swallowed the start, which is the period's
// start in the offset the zone had before the gap.
func isBoundary(u tick.Unit, t time.Time) bool {
	_, off := t.Zone()
	start := tick.Previous(u, t, time.FixedZone("", off))
	if start.Equal(t) {
		return true
	}
	if u == tick.Minute || u == tick.Hour {
		// Wall-clock units: every boundary shows HH:MM:00 in its own
		// offset, gaps or not.
		return false
	}
	gap := t.Sub(start)
	if gap <= 0 || gap > maxGap || gap%time.Second != 0 {
		return false
	}
	before := time.FixedZone("", off-int(gap/time.Second))
	return tick.Previous(u, t, before).Equal(t)
}

// policies are the catch-up policies tick reports skips under.
var policies = []string{"all", "latest-only", "skip"}

// checkPassage says how p is not a boundary of u as a ticker emits it, or
// nil. Since must come before At but need not be a boundary in At's
// zone: it is where the unit's cursor stood, a boundary of the zone the
// ticker ran in then, and the first event after a ticker's zone changed
// has one of the old zone's (00:00 UTC is 05:30 in Asia/Kolkata, no hour
// of its).
func checkPassage(u tick.Unit, p tick.Passage) error {
	switch {
	case !isBoundary(u, p.At):
		return &PoisonError{Reason: PoisonNotABoundary, Detail: fmt.Sprintf("At %s is no %s boundary", fmtTime(p.At), u)}
	case !p.Since.Before(p.At):
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("Since %s is not before At %s", fmtTime(p.Since), fmtTime(p.At))}
	case p.EmittedAt.Before(p.At):
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("emitted at %s, before its boundary %s", fmtTime(p.EmittedAt), fmtTime(p.At))}
	}
	return nil
}

// checkSkipped says how s is not a skip report of the subject's unit u as
// a ticker publishes it, or nil. Count is checked against From and To as
// far as the offsets allow (one boundary exactly when From is To); the
// number of boundaries between two instants depends on the zone, which a
// message does not carry.
func checkSkipped(u tick.Unit, s tick.TicksSkipped) error {
	switch {
	case !slices.Contains(tick.Units(), s.Unit):
		return &PoisonError{Reason: PoisonUnknownUnit, Detail: fmt.Sprintf("a skip report of unit %q", cut(string(s.Unit), 64))}
	case s.Unit != u:
		return &PoisonError{Reason: PoisonSubject, Detail: fmt.Sprintf("a skip report of unit %s on the subject of %s", s.Unit, u)}
	case !isBoundary(u, s.From):
		return &PoisonError{Reason: PoisonNotABoundary, Detail: fmt.Sprintf("From %s is no %s boundary", fmtTime(s.From), u)}
	case !isBoundary(u, s.To):
		return &PoisonError{Reason: PoisonNotABoundary, Detail: fmt.Sprintf("To %s is no %s boundary", fmtTime(s.To), u)}
	case s.To.Before(s.From):
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("From %s is after To %s", fmtTime(s.From), fmtTime(s.To))}
	case s.Count < 1 || (s.Count == 1) != s.From.Equal(s.To):
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("a count of %d from %s to %s", s.Count, fmtTime(s.From), fmtTime(s.To))}
	case !slices.Contains(policies, s.Policy):
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("policy %q is none of %q", cut(s.Policy, 64), policies)}
	case s.EmittedAt.Before(s.To):
		return &PoisonError{Reason: PoisonInconsistent, Detail: fmt.Sprintf("emitted at %s, before the last skipped boundary %s", fmtTime(s.EmittedAt), fmtTime(s.To))}
	}
	return nil
}

// fmtTime prints an instant for an error, with its offset's seconds.
func fmtTime(t time.Time) string { return timefmt.Format(t) }
