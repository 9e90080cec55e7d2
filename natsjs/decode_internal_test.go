package natsjs

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	// reason is why decode must refuse it; "" for a real event.
	reason PoisonReason
}

func (s sample) wire() wire {
	h := nats.Header{}
	if s.id != "" {
		h.Set(nats.MsgIdHdr, s.id)
	}
	return wire{subject: s.subject, header: h, data: s.data}
}

// encoded is the sample of what Encode sends for ev.
func encoded(t testing.TB, name string, ev any) sample {
	t.Helper()
	msg, err := Encode(testPrefix, ev)
	require.NoError(t, err, name)
	return sample{name: name, subject: msg.Subject, id: msg.Header.Get(nats.MsgIdHdr), data: msg.Data}
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

	good := encoded(t, "", minute)
	withBody := func(name, data string, reason PoisonReason) sample {
		return sample{name: name, subject: good.subject, id: good.id, data: []byte(data), reason: reason}
	}
	skipJSON := encoded(t, "", skip)
	rebuilt := func(name string, p tick.Passage, reason PoisonReason) sample {
		m := encoded(t, name, tick.MinuteHasPassed{Passage: p})
		m.reason = reason
		return m
	}
	s = append(s,
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
	)
	return s
}

// Each real message decodes to its event; each poison is refused with its
// reason, and what it says is bounded whatever the body held.
func TestDecodeRefusesEachPoisonWithItsReason(t *testing.T) {
	for _, s := range samples(t) {
		ev, err := decode(testPrefix, s.wire())
		if s.reason == "" {
			require.NoError(t, err, s.name)
			require.NoError(t, valid(testPrefix, s.subject, s.id, ev), s.name)
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
// message on subject with Nats-Msg-Id id, is the event a ticker emits,
// derived again from the wall clock of its instants (their own offsets)
// and the publisher's id scheme, without decode's helpers or tick's
// boundary functions.
func valid(prefix, subject, id string, ev any) error {
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
// panics). Seeds: the samples, real and poison.
//
//	go test ./natsjs -run '^$' -fuzz FuzzDecode -fuzztime 60s
func FuzzDecode(f *testing.F) {
	for _, s := range samples(f) {
		if len(s.data) > 4<<10 {
			// The huge bodies: the fuzzer's corpus files would be
			// megabytes; a 5 KiB one stands for them.
			s.data = s.data[:5<<10]
		}
		f.Add(s.subject, s.id, s.data)
	}
	f.Fuzz(func(t *testing.T, subject, id string, data []byte) {
		h := nats.Header{}
		if id != "" {
			h.Set(nats.MsgIdHdr, id)
		}
		ev, err := decode(testPrefix, wire{subject: subject, header: h, data: data})
		if err != nil {
			if len(err.Error()) > 2048 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		if err := valid(testPrefix, subject, id, ev); err != nil {
			t.Fatalf("decoded %#v from %q %q %q, which is no event: %v", ev, subject, id, data, err)
		}
	})
}

// FuzzDecodeFields fuzzes what the bytes of FuzzDecode rarely reach: the
// values of well-formed messages. Each input builds an event from fields
// — a unit, an instant snapped to the unit's boundary in a fixed offset
// and moved by jitter seconds, Since and the emission around it, an id
// right, missing or another's, a skip report's count — and the property
// is FuzzDecode's: what decodes, the oracle takes.
//
//	go test ./natsjs -run '^$' -fuzz FuzzDecodeFields -fuzztime 60s
func FuzzDecodeFields(f *testing.F) {
	at := time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC).Unix()
	for i := range tick.Units() {
		f.Add(uint8(i), at, int32(0), int32(0), int64(-60), int64(1000), false, uint8(0), int64(1))
		f.Add(uint8(i), at, int32(5*3600+1800), int32(0), int64(-7*24*3600), int64(1), true, uint8(4), int64(2))
		f.Add(uint8(i), at, int32(-(44*60 + 30)), int32(3600), int64(-3600), int64(0), false, uint8(0), int64(1))
	}
	const minUnix, maxUnix = -62135596800 + 2*366*24*3600, 253402300799 - 2*366*24*3600 // years 3..9997
	f.Fuzz(func(t *testing.T, unit uint8, at int64, offset, jitter int32, since, emitted int64, catchUp bool, mode uint8, count int64) {
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
		)
		if mode&4 == 0 {
			subject = testPrefix + "." + string(u)
			id = string(u) + "/" + b.UTC().Format(time.RFC3339Nano)
			body, err = json.Marshal(tick.Passage{At: b, Since: other, EmittedAt: emittedAt, CatchUp: catchUp})
		} else {
			from, to := b, other
			subject = testPrefix + ".skipped." + string(u)
			id = "skipped/" + string(u) + "/" + from.UTC().Format(time.RFC3339Nano) + ".." + to.UTC().Format(time.RFC3339Nano)
			body, err = json.Marshal(tick.TicksSkipped{Unit: u, From: from, To: to, Count: count, Policy: policies[int(mode>>3)%len(policies)], EmittedAt: emittedAt})
		}
		if err != nil {
			return
		}
		switch mode % 4 {
		case 1:
			id = ""
		case 2:
			id += "x"
		}
		h := nats.Header{}
		if id != "" {
			h.Set(nats.MsgIdHdr, id)
		}
		ev, err := decode(testPrefix, wire{subject: subject, header: h, data: body})
		if err != nil {
			return
		}
		if err := valid(testPrefix, subject, id, ev); err != nil {
			t.Fatalf("decoded %#v from %s %s %s, which is no event: %v", ev, subject, id, body, err)
		}
	})
}
