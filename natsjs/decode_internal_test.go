package natsjs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/tick"
)

const testPrefix = "passage.time"

// sample is a message for decode: one a publisher sends, or poison.
type sample struct {
	name    string
	subject string
	id      string
	data    []byte
	// ce are the CloudEvents attributes, by header; nil for the shape
	// before issue 34 (tick's JSON, no ce- header).
	ce map[string]string
	// reason is why decode must refuse it; "" for a real event.
	reason PoisonReason
}

func (s sample) wire() wire {
	return wire{subject: s.subject, header: s.header(), data: s.data}
}

func (s sample) header() nats.Header {
	h := nats.Header{}
	if s.id != "" {
		h.Set(nats.MsgIdHdr, s.id)
	}
	for k, v := range s.ce {
		h.Set(k, v)
	}
	return h
}

// encoded is the sample of what Encode sends for ev: a CloudEvent.
func encoded(t testing.TB, name string, ev any) sample {
	t.Helper()
	msg, err := Encode(testPrefix, ev)
	require.NoError(t, err, name)
	ce := map[string]string{}
	for k, v := range msg.Header {
		if strings.HasPrefix(k, "ce-") {
			ce[k] = v[0]
		}
	}
	require.Len(t, ce, 7, "%s: %v", name, msg.Header)
	return sample{name: name, subject: msg.Subject, id: msg.Header.Get(nats.MsgIdHdr), data: msg.Data, ce: ce}
}

// legacy is the sample of what a publisher sent for ev before issue 34,
// and a Consumer reads for one release: tick's JSON of the event, no ce-
// header.
func legacy(t testing.TB, name string, ev any) sample {
	t.Helper()
	m := encoded(t, name, ev)
	data, err := json.Marshal(ev)
	require.NoError(t, err, name)
	m.data, m.ce = data, nil
	return m
}

// with is s with the attribute header set to value ("" removes it).
func (s sample) with(name, header, value string, reason PoisonReason) sample {
	ce := maps.Clone(s.ce)
	if value == "" {
		delete(ce, header)
	} else {
		ce[header] = value
	}
	s.name, s.ce, s.reason = name, ce, reason
	return s
}

func load(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// boundaryOf is the event a ticker in loc emits for u's boundary b, the
// cursor on the boundary before it, a second after b.
func boundaryOf(t testing.TB, u tick.Unit, b time.Time, loc *time.Location) tick.Event {
	t.Helper()
	ev, err := tick.NewEvent(u, tick.Passage{At: b, Since: tick.Previous(u, b.Add(-time.Nanosecond), loc), EmittedAt: b.Add(time.Second)})
	require.NoError(t, err)
	return ev
}

// samples are real messages — every unit in UTC and in zones whose
// offsets have half hours or seconds, a day beginning after a gap, a
// catch-up, skip reports — and poison of every kind the issue names.
func samples(t testing.TB) []sample {
	t.Helper()
	at := time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC)
	minute := tick.MinuteHasPassed{Passage: tick.Passage{At: at, Since: at.Add(-time.Minute), EmittedAt: at.Add(time.Second)}}
	skip := tick.TicksSkipped{Unit: tick.Minute, From: at, To: at.Add(3 * time.Minute), Count: 4, Policy: "latest-only", EmittedAt: at.Add(4 * time.Minute)}
	var s []sample
	for _, loc := range []*time.Location{time.UTC, load(t, "Asia/Kolkata"), load(t, "Africa/Monrovia"), load(t, "Australia/Lord_Howe")} {
		for _, u := range tick.Units() {
			b := tick.Previous(u, time.Date(1971, 6, 15, 10, 30, 0, 0, time.UTC), loc)
			if loc == time.UTC || loc.String() == "Asia/Kolkata" {
				b = tick.Previous(u, at, loc)
			}
			s = append(s, encoded(t, fmt.Sprintf("%s in %s", u, loc), boundaryOf(t, u, b, loc)))
		}
	}
	// America/Sao_Paulo's 2018-11-04 began at 01:00 -02:00: midnight -03:00
	// was skipped. The day after has the gap's instant as Since.
	sp := load(t, "America/Sao_Paulo")
	gapDay := tick.Next(tick.Day, time.Date(2018, 11, 3, 12, 0, 0, 0, sp), sp)
	require.Equal(t, "2018-11-04T01:00:00-02:00", gapDay.Format(time.RFC3339))
	s = append(s, encoded(t, "a day beginning after a gap", boundaryOf(t, tick.Day, gapDay, sp)))
	s = append(s, encoded(t, "the day after a gap", boundaryOf(t, tick.Day, tick.Next(tick.Day, gapDay, sp), sp)))
	s = append(s, encoded(t, "a catch-up", tick.HourHasPassed{Passage: tick.Passage{At: at.Truncate(time.Hour), Since: at.Add(-5 * time.Hour).Truncate(time.Hour), EmittedAt: at.Add(time.Hour), CatchUp: true}}))
	s = append(s, encoded(t, "a skip report", skip))
	s = append(s, encoded(t, "a skip of one", tick.TicksSkipped{Unit: tick.Day, From: at.Truncate(24 * time.Hour), To: at.Truncate(24 * time.Hour), Count: 1, Policy: "skip", EmittedAt: at}))
	// The shape before issue 34, read for one release.
	for _, u := range tick.Units() {
		s = append(s, legacy(t, fmt.Sprintf("%s in UTC, as tick's JSON", u), boundaryOf(t, u, tick.Previous(u, at, time.UTC), time.UTC)))
	}
	s = append(s, legacy(t, "a skip report as tick's JSON", skip))
	s = append(s, legacy(t, "a day beginning after a gap as tick's JSON", boundaryOf(t, tick.Day, gapDay, sp)))

	s = append(s, legacyPoison(t, at, minute, skip)...)
	s = append(s, cloudEventPoison(t, at, minute, skip)...)
	return s
}

// legacyPoison is poison in the shape before issue 34: tick's JSON, no
// ce- header.
func legacyPoison(t testing.TB, at time.Time, minute tick.MinuteHasPassed, skip tick.TicksSkipped) []sample {
	good := legacy(t, "", minute)
	withBody := func(name, data string, reason PoisonReason) sample {
		return sample{name: name, subject: good.subject, id: good.id, data: []byte(data), reason: reason}
	}
	skipJSON := legacy(t, "", skip)
	rebuilt := func(name string, p tick.Passage, reason PoisonReason) sample {
		m := legacy(t, name, tick.MinuteHasPassed{Passage: p})
		m.reason = reason
		return m
	}
	return []sample{
		withBody("a domain event", `{"Order":"o-1","N":7}`, PoisonMissingField),
		withBody("a skip report on a minute subject", string(skipJSON.data), PoisonMissingField),
		withBody("null", `null`, PoisonMissingField),
		withBody("an empty object", `{}`, PoisonMissingField),
		withBody("not JSON", `not an event`, PoisonMalformed),
		withBody("a JSON array", `[1,2]`, PoisonMalformed),
		withBody("an instant that is a number", `{"At":1,"Since":2,"EmittedAt":3,"CatchUp":false}`, PoisonMalformed),
		withBody("the zero instant", strings.Replace(string(good.data), "2026-11-26T12:01:00Z", "0001-01-01T00:00:00Z", 1), PoisonMissingField),
		withBody("a huge body", `{"At":"`+strings.Repeat("9", 1<<20)+`"}`, PoisonTooLarge),
		withBody("a huge instant within the size", `{"At":"`+strings.Repeat("9", 60<<10)+`","Since":"x","EmittedAt":"y","CatchUp":false}`, PoisonMalformed),
		rebuilt("a boundary not on a boundary", tick.Passage{At: at.Add(30 * time.Second), Since: at.Add(-time.Minute), EmittedAt: at.Add(time.Minute)}, PoisonNotABoundary),
		rebuilt("emitted before its boundary", tick.Passage{At: at, Since: at.Add(-time.Minute), EmittedAt: at.Add(-time.Second)}, PoisonInconsistent),
		rebuilt("previous after the boundary", tick.Passage{At: at, Since: at.Add(time.Minute), EmittedAt: at.Add(time.Minute)}, PoisonInconsistent),
		sample{name: "a wrong message id", subject: good.subject, id: minute.ID() + "x", data: good.data, reason: PoisonMessageID},
		sample{name: "another minute's message id", subject: good.subject, id: "minute/2026-11-26T12:02:00Z", data: good.data, reason: PoisonMessageID},
		sample{name: "no message id", subject: good.subject, data: good.data, reason: PoisonMessageID},
		sample{name: "a minute on the hour's subject", subject: testPrefix + ".hour", id: "hour/2026-11-26T12:01:00Z", data: good.data, reason: PoisonNotABoundary},
		sample{name: "an unknown unit's subject", subject: testPrefix + ".fortnight", id: "fortnight/2026-11-26T12:01:00Z", data: good.data, reason: PoisonUnknownUnit},
		sample{name: "a skip for fortnight", subject: testPrefix + ".skipped.fortnight", id: "skipped/fortnight/2026-11-26T12:01:00Z..2026-11-26T12:04:00Z",
			data: bytes.Replace(skipJSON.data, []byte(`"minute"`), []byte(`"fortnight"`), 1), reason: PoisonUnknownUnit},
		sample{name: "a skip of hours on the minutes' subject", subject: skipJSON.subject, id: skipJSON.id,
			data: bytes.Replace(skipJSON.data, []byte(`"minute"`), []byte(`"hour"`), 1), reason: PoisonSubject},
		sample{name: "a skip without a unit", subject: skipJSON.subject, id: skipJSON.id,
			data: bytes.Replace(skipJSON.data, []byte(`"Unit":"minute",`), nil, 1), reason: PoisonMissingField},
		sample{name: "a skip counting one of four", subject: skipJSON.subject, id: skipJSON.id,
			data: bytes.Replace(skipJSON.data, []byte(`"Count":4`), []byte(`"Count":1`), 1), reason: PoisonInconsistent},
		sample{name: "a skip of an unknown policy", subject: skipJSON.subject, id: skipJSON.id,
			data: bytes.Replace(skipJSON.data, []byte(`latest-only`), []byte(`never`), 1), reason: PoisonInconsistent},
		sample{name: "a skip's subject with a token after its unit", subject: skipJSON.subject + ".x", id: skipJSON.id, data: skipJSON.data, reason: PoisonSubject},
		sample{name: "a boundary on a skip's subject", subject: skipJSON.subject, id: good.id, data: good.data, reason: PoisonMissingField},
	}
}

// cloudEventPoison is poison in the shape Encode writes: data and ce-
// headers that disagree with each other, the subject or the id.
func cloudEventPoison(t testing.TB, at time.Time, minute tick.MinuteHasPassed, skip tick.TicksSkipped) []sample {
	good := encoded(t, "", minute)
	withBody := func(name, data string, reason PoisonReason) sample {
		m := good
		m.name, m.data, m.reason = name, []byte(data), reason
		return m
	}
	skipCE := encoded(t, "", skip)
	withSkip := func(name, old, new string, reason PoisonReason) sample {
		m := skipCE
		m.name, m.data, m.reason = name, bytes.Replace(skipCE.data, []byte(old), []byte(new), 1), reason
		return m
	}
	rebuilt := func(name string, p tick.Passage, reason PoisonReason) sample {
		m := encoded(t, name, tick.MinuteHasPassed{Passage: p})
		m.reason = reason
		return m
	}
	upper := good
	upper.name, upper.ce = "a CloudEvent whose header names are upper case", map[string]string{}
	for k, v := range good.ce {
		upper.ce[strings.ToUpper(k)] = v
	}
	quoted := good.with("a CloudEvent whose ce-id is quoted", "ce-id", `"`+minute.ID()+`"`, "")
	return []sample{
		upper, quoted,
		withBody("a CloudEvent of a domain event", `{"order":"o-1","n":7}`, PoisonMissingField),
		withBody("a CloudEvent of null", `null`, PoisonMissingField),
		withBody("a CloudEvent of an empty object", `{}`, PoisonMissingField),
		withBody("a CloudEvent of no JSON", `not an event`, PoisonMalformed),
		withBody("a CloudEvent of a JSON array", `[1,2]`, PoisonMalformed),
		withBody("tick's JSON under ce- headers", string(legacy(t, "", minute).data), PoisonMissingField),
		withBody("a CloudEvent whose data's names are capitalised", strings.NewReplacer(`"unit"`, `"Unit"`, `"boundary"`, `"Boundary"`).Replace(string(good.data)), PoisonMissingField),
		withBody("a CloudEvent without a previous boundary", strings.Replace(string(good.data), `"previous":"2026-11-26T12:00:00Z"`, `"previous":null`, 1), PoisonMissingField),
		withBody("a CloudEvent of the zero instant", strings.Replace(string(good.data), `"boundary":"2026-11-26T12:01:00Z"`, `"boundary":"0001-01-01T00:00:00Z"`, 1), PoisonMissingField),
		withBody("a CloudEvent of an hour's data on the minutes' subject", strings.Replace(string(good.data), `"unit":"minute"`, `"unit":"hour"`, 1), PoisonSubject),
		withBody("a CloudEvent of a fortnight's data", strings.Replace(string(good.data), `"unit":"minute"`, `"unit":"fortnight"`, 1), PoisonUnknownUnit),
		withBody("a CloudEvent of a skip report's data as a minute", string(skipCE.data), PoisonMissingField),
		withBody("a CloudEvent of a huge body", `{"boundary":"`+strings.Repeat("9", 1<<20)+`"}`, PoisonTooLarge),
		rebuilt("a CloudEvent not on a boundary", tick.Passage{At: at.Add(30 * time.Second), Since: at.Add(-time.Minute), EmittedAt: at.Add(time.Minute)}, PoisonNotABoundary),
		rebuilt("a CloudEvent emitted before its boundary", tick.Passage{At: at, Since: at.Add(-time.Minute), EmittedAt: at.Add(-time.Second)}, PoisonInconsistent),
		good.with("a CloudEvent of another specversion", "ce-specversion", "0.3", PoisonMalformed),
		good.with("a CloudEvent without a type", "ce-type", "", PoisonMissingField),
		good.with("a CloudEvent without an id", "ce-id", "", PoisonMissingField),
		good.with("a CloudEvent without a time", "ce-time", "", PoisonMissingField),
		good.with("a CloudEvent without a source", "ce-source", "", PoisonMissingField),
		good.with("a CloudEvent without a subject", "ce-subject", "", PoisonMissingField),
		good.with("a CloudEvent without a content type", "ce-datacontenttype", "", PoisonMissingField),
		good.with("a CloudEvent of a skip report's type on the minutes' subject", "ce-type", "TicksSkipped", PoisonSubject),
		good.with("a CloudEvent of an hour's type on the minutes' subject", "ce-type", "HourHasPassed", PoisonSubject),
		good.with("a CloudEvent of a domain event's type", "ce-type", "OrderPlaced", PoisonSubject),
		good.with("a CloudEvent under another minute's id", "ce-id", "minute/2026-11-26T12:02:00Z", PoisonMessageID),
		good.with("a CloudEvent whose id does not decode", "ce-id", "minute%zz", PoisonMalformed),
		good.with("a CloudEvent from another source", "ce-source", "/orders", PoisonInconsistent),
		good.with("a CloudEvent of another subject", "ce-subject", "hour", PoisonInconsistent),
		good.with("a CloudEvent of another time", "ce-time", "2026-11-26T12:02:00Z", PoisonInconsistent),
		good.with("a CloudEvent whose time is no instant", "ce-time", "yesterday", PoisonMalformed),
		good.with("a CloudEvent of text", "ce-datacontenttype", "text/plain", PoisonMalformed),
		withSkip("a CloudEvent of a skip of hours on the minutes' subject", `"unit":"minute"`, `"unit":"hour"`, PoisonSubject),
		withSkip("a CloudEvent of a skip counting one of four", `"count":4`, `"count":1`, PoisonInconsistent),
		withSkip("a CloudEvent of a skip without a policy", `"policy":"latest-only",`, ``, PoisonMissingField),
		skipCE.with("a CloudEvent of a skip whose time is its first boundary", "ce-time", FormatTime(skip.From), PoisonInconsistent),
		skipCE.with("a CloudEvent of a skip under a minute's type", "ce-type", "MinuteHasPassed", PoisonSubject),
		sample{name: "a CloudEvent of a minute under another Nats-Msg-Id", subject: good.subject, id: "minute/2026-11-26T12:02:00Z", data: good.data, ce: good.ce, reason: PoisonMessageID},
		sample{name: "a CloudEvent of a minute without a Nats-Msg-Id", subject: good.subject, data: good.data, ce: good.ce, reason: PoisonMessageID},
	}
}

// Each real message decodes to its event; each poison is refused with its
// reason, and what it says is bounded whatever the body held.
func TestDecodeRefusesEachPoisonWithItsReason(t *testing.T) {
	for _, s := range samples(t) {
		ev, err := decode(testPrefix, s.wire())
		if s.reason == "" {
			require.NoError(t, err, s.name)
			require.NoError(t, valid(testPrefix, s.subject, s.header(), ev), s.name)
			continue
		}
		var p *PoisonError
		require.ErrorAs(t, err, &p, s.name)
		require.ErrorIs(t, err, ErrUndecodable, s.name)
		require.Equal(t, s.reason, p.Reason, "%s: %v", s.name, err)
		require.LessOrEqual(t, len(err.Error()), 1024, s.name)
	}
}

// decode takes every boundary a ticker computes, in zones whose days
// begin after a gap (Sao Paulo, Havana, Beirut, Cairo, Santiago until
// they stopped), that skipped a day (Apia), with half-hour offsets and
// half-hour DST (Lord Howe), offsets with seconds changing at midnight
// (Monrovia, 1972): every boundary of every unit over the years, and
// the minutes and hours around every transition.
func TestDecodeTakesEveryBoundaryATickerEmits(t *testing.T) {
	zones := []string{"UTC", "Europe/Berlin", "America/Sao_Paulo", "America/Havana", "Asia/Beirut", "Africa/Cairo", "America/Santiago",
		"Pacific/Apia", "Australia/Lord_Howe", "Asia/Kolkata", "America/St_Johns", "Asia/Tehran", "Africa/Casablanca", "Africa/Monrovia"}
	n := 0
	check := func(u tick.Unit, b time.Time, loc *time.Location) {
		t.Helper()
		ev := boundaryOf(t, u, b, loc)
		msg, err := Encode(testPrefix, ev)
		require.NoError(t, err)
		back, err := decode(testPrefix, wireOf(msg))
		require.NoError(t, err, "%s %s in %s", u, b, loc)
		require.Equal(t, ev.ID(), back.(tick.Event).ID())
		n++
	}
	for _, name := range zones {
		loc := load(t, name)
		from, until := time.Date(2010, 1, 1, 0, 0, 0, 0, loc), time.Date(2020, 1, 1, 0, 0, 0, 0, loc)
		if name == "Africa/Monrovia" {
			from, until = time.Date(1971, 1, 1, 0, 0, 0, 0, loc), time.Date(1973, 1, 1, 0, 0, 0, 0, loc)
		}
		for _, u := range []tick.Unit{tick.Day, tick.Week, tick.Month, tick.Quarter, tick.Year} {
			for b := range tick.Boundaries(u, from, until, loc) {
				check(u, b, loc)
			}
		}
		// Around each transition: ZoneBounds' end is the next one.
		for at := from; at.Before(until); {
			_, end := at.In(loc).ZoneBounds()
			if end.IsZero() {
				break
			}
			for b := range tick.Boundaries(tick.Minute, end.Add(-15*time.Minute), end.Add(15*time.Minute), loc) {
				check(tick.Minute, b, loc)
			}
			for b := range tick.Boundaries(tick.Hour, end.Add(-3*time.Hour), end.Add(3*time.Hour), loc) {
				check(tick.Hour, b, loc)
			}
			at = end
		}
	}
	t.Logf("%d boundaries decoded", n)
}

// valid is the oracle of the fuzz test: whether ev, decoded from a
// message on subject with headers h, is the event a ticker emits,
// derived again from the wall clock of its instants (their own offsets),
// the publisher's id scheme and, for a CloudEvent (a ce-specversion
// header), its attributes as docs/events.md states them, without
// decode's helpers or tick's boundary functions.
func valid(prefix, subject string, h nats.Header, ev any) error {
	id := h.Get(nats.MsgIdHdr)
	if err := validCloudEvent(h, ev, id); err != nil {
		return err
	}
	units := map[string]bool{"minute": true, "hour": true, "day": true, "week": true, "month": true, "quarter": true, "year": true}
	switch e := ev.(type) {
	case tick.Event:
		u := string(e.Unit())
		p := passageOf(e)
		switch {
		case !units[u]:
			return fmt.Errorf("unit %q", u)
		case subject != prefix+"."+u:
			return fmt.Errorf("a %s on %s", u, subject)
		case fmt.Sprintf("%T", e) != "tick."+strings.ToUpper(u[:1])+u[1:]+"HasPassed":
			return fmt.Errorf("a %T for %s", e, u)
		case p.At.IsZero() || p.Since.IsZero() || p.EmittedAt.IsZero():
			return fmt.Errorf("a zero instant: %+v", p)
		case !onWallBoundary(u, p.At):
			return fmt.Errorf("At %s is no %s boundary", p.At, u)
		case !p.Since.Before(p.At):
			return fmt.Errorf("Since %s not before At %s", p.Since, p.At)
		case p.EmittedAt.Before(p.At):
			return fmt.Errorf("emitted %s before %s", p.EmittedAt, p.At)
		case id != u+"/"+p.At.UTC().Format(time.RFC3339Nano):
			return fmt.Errorf("id %q for %s", id, p.At)
		}
	case tick.TicksSkipped:
		u := string(e.Unit)
		switch {
		case !units[u]:
			return fmt.Errorf("unit %q", u)
		case subject != prefix+".skipped."+u:
			return fmt.Errorf("a skip of %s on %s", u, subject)
		case e.From.IsZero() || e.To.IsZero() || e.EmittedAt.IsZero():
			return fmt.Errorf("a zero instant: %+v", e)
		case !onWallBoundary(u, e.From) || !onWallBoundary(u, e.To):
			return fmt.Errorf("%s..%s are no %s boundaries", e.From, e.To, u)
		case e.To.Before(e.From) || e.Count < 1 || (e.Count == 1) != e.From.Equal(e.To):
			return fmt.Errorf("%d from %s to %s", e.Count, e.From, e.To)
		case e.Policy != "all" && e.Policy != "latest-only" && e.Policy != "skip":
			return fmt.Errorf("policy %q", e.Policy)
		case e.EmittedAt.Before(e.To):
			return fmt.Errorf("emitted %s before %s", e.EmittedAt, e.To)
		case id != "skipped/"+u+"/"+e.From.UTC().Format(time.RFC3339Nano)+".."+e.To.UTC().Format(time.RFC3339Nano):
			return fmt.Errorf("id %q", id)
		}
	default:
		return fmt.Errorf("a %T", ev)
	}
	return nil
}

// validCloudEvent checks the attributes of a message in the CloudEvents
// binary mode against the event decoded from it: specversion 1.0, the
// id the Nats-Msg-Id carries, the source of time, the type's name, the
// unit as subject, the instant the event is about as time (RFC 3339),
// JSON data. Header names are matched whatever their case, values
// unquoted and percent-decoded (url.PathUnescape), as the binding says.
func validCloudEvent(h nats.Header, ev any, id string) error {
	attr := func(name string) (string, bool) {
		for k, v := range h {
			if strings.EqualFold(k, "ce-"+name) && len(v) > 0 {
				val := v[0]
				if u, err := strconv.Unquote(val); err == nil && strings.HasPrefix(val, `"`) {
					val = u
				}
				d, err := url.PathUnescape(val)
				if err != nil {
					// Present, and no value it could be compared to.
					return "\x00undecodable", true
				}
				return d, true
			}
		}
		return "", false
	}
	if v, ok := attr("specversion"); !ok {
		return nil // tick's JSON: valid checks the rest
	} else if v != "1.0" {
		return fmt.Errorf("specversion %q", v)
	}
	var typ, unit string
	var at time.Time
	switch e := ev.(type) {
	case tick.Event:
		typ, unit, at = strings.TrimPrefix(fmt.Sprintf("%T", e), "tick."), string(e.Unit()), passageOf(e).At
	case tick.TicksSkipped:
		typ, unit, at = "TicksSkipped", string(e.Unit), e.To
	default:
		return fmt.Errorf("a %T", ev)
	}
	want := map[string]string{"id": id, "source": "/passage/tick", "type": typ, "subject": unit, "datacontenttype": "application/json"}
	for name, w := range want {
		if got, ok := attr(name); !ok || got != w {
			return fmt.Errorf("ce-%s %q, want %q", name, got, w)
		}
	}
	got, _ := attr("time")
	tm, err := time.Parse(time.RFC3339Nano, got)
	if err != nil || !tm.Equal(at) {
		return fmt.Errorf("ce-time %q for %s", got, at)
	}
	return nil
}

func passageOf(e tick.Event) tick.Passage {
	switch e := e.(type) {
	case tick.MinuteHasPassed:
		return e.Passage
	case tick.HourHasPassed:
		return e.Passage
	case tick.DayHasPassed:
		return e.Passage
	case tick.WeekHasPassed:
		return e.Passage
	case tick.MonthHasPassed:
		return e.Passage
	case tick.QuarterHasPassed:
		return e.Passage
	case tick.YearHasPassed:
		return e.Passage
	}
	panic(fmt.Sprintf("%T", e))
}

// onWallBoundary reads t's wall clock in its own offset: a minute shows
// HH:MM:00, an hour HH:00:00; the longer units begin on the first date of
// their period (a Monday; the 1st; of January, April, July or October;
// January 1st) at 00:00:00, or up to three hours later in whole seconds
// where a gap swallowed midnight (what the publisher's zone did there
// the message does not say).
func onWallBoundary(u string, t time.Time) bool {
	_, m, d := t.Date()
	hh, mm, ss := t.Clock()
	ns := t.Nanosecond()
	switch u {
	case "minute":
		return ss == 0 && ns == 0
	case "hour":
		return mm == 0 && ss == 0 && ns == 0
	}
	var first bool
	switch u {
	case "day":
		first = true
	case "week":
		first = t.Weekday() == time.Monday
	case "month":
		first = d == 1
	case "quarter":
		first = d == 1 && (m-1)%3 == 0
	case "year":
		first = d == 1 && m == time.January
	}
	sinceMidnight := time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute + time.Duration(ss)*time.Second
	return first && ns == 0 && sinceMidnight <= 3*time.Hour
}

// No message both decodes and is not the event a ticker emits: decode
// never lets through what the oracle, derived apart, refuses (nor
// panics). Seeds: the samples, real and poison, in both shapes; ce holds
// the headers besides Nats-Msg-Id, one "name: value" a line, so that the
// fuzzer mutates a CloudEvent's attributes too.
//
//	go test ./natsjs -run '^$' -fuzz 'FuzzDecode$' -fuzztime 60s
func FuzzDecode(f *testing.F) {
	for _, s := range samples(f) {
		if len(s.data) > 4<<10 {
			// The huge bodies: the fuzzer's corpus files would be
			// megabytes; a 5 KiB one stands for them.
			s.data = s.data[:5<<10]
		}
		var ce strings.Builder
		for _, k := range slices.Sorted(maps.Keys(s.ce)) {
			fmt.Fprintf(&ce, "%s: %s\n", k, s.ce[k])
		}
		f.Add(s.subject, s.id, ce.String(), s.data)
	}
	f.Fuzz(func(t *testing.T, subject, id, ce string, data []byte) {
		h := nats.Header{}
		if id != "" {
			h.Set(nats.MsgIdHdr, id)
		}
		for line := range strings.Lines(ce) {
			if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ": "); ok {
				h.Set(k, v)
			}
		}
		ev, err := decode(testPrefix, wire{subject: subject, header: h, data: data})
		if err != nil {
			if len(err.Error()) > 2048 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		if err := valid(testPrefix, subject, h, ev); err != nil {
			t.Fatalf("decoded %#v from %q %q %q %q, which is no event: %v", ev, subject, id, ce, data, err)
		}
	})
}

// FuzzDecodeFields fuzzes what the bytes of FuzzDecode rarely reach: the
// values of well-formed messages. Each input builds an event from fields
// — a unit, an instant snapped to the unit's boundary in a fixed offset
// and moved by jitter seconds, Since and the emission around it, an id
// right, missing or another's, a skip report's count — written as a
// CloudEvent (Encode's shape) or, with legacyShape, as tick's JSON; the
// property is FuzzDecode's: what decodes, the oracle takes.
//
//	go test ./natsjs -run '^$' -fuzz FuzzDecodeFields -fuzztime 60s
func FuzzDecodeFields(f *testing.F) {
	at := time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC).Unix()
	for i := range tick.Units() {
		for _, legacyShape := range []bool{false, true} {
			f.Add(uint8(i), at, int32(0), int32(0), int64(-60), int64(1000), false, uint8(0), int64(1), legacyShape)
			f.Add(uint8(i), at, int32(5*3600+1800), int32(0), int64(-7*24*3600), int64(1), true, uint8(4), int64(2), legacyShape)
			f.Add(uint8(i), at, int32(-(44*60 + 30)), int32(3600), int64(-3600), int64(0), false, uint8(0), int64(1), legacyShape)
		}
	}
	const minUnix, maxUnix = -62135596800 + 2*366*24*3600, 253402300799 - 2*366*24*3600 // years 3..9997
	f.Fuzz(func(t *testing.T, unit uint8, at int64, offset, jitter int32, since, emitted int64, catchUp bool, mode uint8, count int64, legacyShape bool) {
		u := tick.Units()[int(unit)%len(tick.Units())]
		zone := time.FixedZone("", int(offset%(18*3600)))
		at = minUnix + (at%(maxUnix-minUnix)+(maxUnix-minUnix))%(maxUnix-minUnix)
		b := tick.Previous(u, time.Unix(at, 0), zone).Add(time.Duration(jitter%(48*3600)) * time.Second)
		other := b.Add(time.Duration(since%1e9) * time.Second)
		emittedAt := b.Add(time.Duration(emitted%1e12) * time.Millisecond)
		var (
			subject, id string
			body        []byte
			err         error
			ce          CloudEvent
		)
		if mode&4 == 0 {
			subject = testPrefix + "." + string(u)
			id = string(u) + "/" + b.UTC().Format(time.RFC3339Nano)
			p := tick.Passage{At: b, Since: other, EmittedAt: emittedAt, CatchUp: catchUp}
			body, err = json.Marshal(p)
			if !legacyShape {
				e, _ := tick.NewEvent(u, tick.Passage{})
				ce = CloudEvent{Source: SourceTick, Type: strings.TrimPrefix(fmt.Sprintf("%T", e), "tick."), Subject: string(u), Time: b}
				body, err = json.Marshal(boundaryData{Unit: u, Boundary: tick.JSONTime{Time: b}, Previous: tick.JSONTimeOf(other), EmittedAt: tick.JSONTime{Time: emittedAt}, CatchUp: catchUp})
			}
		} else {
			from, to := b, other
			subject = testPrefix + ".skipped." + string(u)
			id = "skipped/" + string(u) + "/" + from.UTC().Format(time.RFC3339Nano) + ".." + to.UTC().Format(time.RFC3339Nano)
			s := tick.TicksSkipped{Unit: u, From: from, To: to, Count: count, Policy: policies[int(mode>>3)%len(policies)], EmittedAt: emittedAt}
			body, err = json.Marshal(s)
			if !legacyShape {
				ce = CloudEvent{Source: SourceTick, Type: TypeTicksSkipped, Subject: string(u), Time: to}
				body, err = json.Marshal(skippedData{Unit: u, From: tick.JSONTime{Time: from}, To: tick.JSONTime{Time: to}, Count: s.Count, Policy: s.Policy, EmittedAt: tick.JSONTime{Time: emittedAt}})
			}
		}
		if err != nil {
			return
		}
		ce.ID = id
		switch mode % 4 {
		case 1:
			id = ""
		case 2:
			id += "x"
			if mode&64 != 0 {
				ce.ID = id
			}
		}
		h := nats.Header{}
		if id != "" {
			h.Set(nats.MsgIdHdr, id)
		}
		if !legacyShape {
			ce.SetHeaders(h)
		}
		ev, err := decode(testPrefix, wire{subject: subject, header: h, data: body})
		if err != nil {
			return
		}
		if err := valid(testPrefix, subject, h, ev); err != nil {
			t.Fatalf("decoded %#v from %s %v %s, which is no event: %v", ev, subject, h, body, err)
		}
	})
}
