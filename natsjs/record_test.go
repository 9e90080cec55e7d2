package natsjs_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

// recordOf is the CloudEvent context and data of Encode's message for a
// time event: what an outbox stores of it.
func recordOf(t *testing.T, event any) (natsjs.CloudEvent, []byte) {
	t.Helper()
	msg, err := natsjs.Encode("acme.time", event)
	require.NoError(t, err)
	ce := natsjs.CloudEvent{Source: natsjs.SourceTick}
	switch e := event.(type) {
	case tick.Event:
		ce.ID, ce.Type, ce.Subject, ce.Time = e.ID(), reflect.TypeOf(e).Name(), string(e.Unit()), e.Boundary()
	case tick.TicksSkipped:
		ce.ID, ce.Type, ce.Subject, ce.Time = natsjs.SkippedID(e), natsjs.TypeTicksSkipped, string(e.Unit), e.To
	}
	return ce, msg.Data
}

// A record of time is published as Encode publishes its event, the data
// as it is: subject, headers and body, for every unit, offsets with
// seconds and a first boundary without a previous one included.
func TestEncodeRecordOfTimeIsWhatEncodeMakesOfTheEvent(t *testing.T) {
	t.Parallel()
	monrovia, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	at := time.Date(1970, 1, 1, 0, 0, 0, 0, monrovia) // -00:44:30
	var events []any
	for _, u := range tick.Units() {
		b := tick.Previous(u, at, monrovia)
		ev, err := tick.NewEvent(u, tick.Passage{At: b, Since: b.Add(-time.Hour), EmittedAt: at.Add(time.Second), CatchUp: true})
		require.NoError(t, err)
		first, err := tick.NewEvent(u, tick.Passage{At: b, EmittedAt: b})
		require.NoError(t, err)
		events = append(events, ev, first,
			tick.TicksSkipped{Unit: u, From: b, To: b, Count: 1, Policy: "skip", EmittedAt: at.Add(time.Hour)})
	}
	for _, e := range events {
		want, err := natsjs.Encode("acme.time", e)
		require.NoError(t, err)
		ce, data := recordOf(t, e)
		got, err := natsjs.EncodeRecord("acme.time", ce, data)
		require.NoError(t, err, "%+v", e)
		require.Equal(t, want.Subject, got.Subject)
		require.Equal(t, want.Header, got.Header)
		require.Equal(t, string(want.Data), string(got.Data))
	}
}

// A schedule's records go under <prefix>.schedule, the name one token
// whatever it holds, the id as Nats-Msg-Id (escaped where a header could
// not carry it), the data as it is.
func TestEncodeRecordPutsASchedulesRecordsUnderItsName(t *testing.T) {
	t.Parallel()
	slot := time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		typ, name, id  string
		subject, msgID string
	}{
		{natsjs.TypeScheduleRun, "nightly-report", "nightly-report@2026-11-21T12:05:00Z", "passage.schedule.nightly-report", "nightly-report@2026-11-21T12:05:00Z"},
		{natsjs.TypeScheduleRun, "billing.eu", "billing.eu@x", "passage.schedule.billing%2Eeu", "billing.eu@x"},
		{natsjs.TypeScheduleRun, "a b*>%é", "a b*>%é@x", "passage.schedule.a%20b%2A%3E%25%C3%A9", "a b*>%25é@x"},
		{natsjs.TypeScheduleRun, "x\r\ny", "x\r\ny@x", "passage.schedule.x%0D%0Ay", "x%0D%0Ay@x"},
		{natsjs.TypeSlotsSkipped, "poll", "slots-skipped/poll/x", "passage.schedule.poll.skipped", "slots-skipped/poll/x"},
	} {
		data := []byte(`{"schedule":"as stored"}`)
		ce := natsjs.CloudEvent{ID: c.id, Source: natsjs.SourceSchedule, Type: c.typ, Subject: c.name, Time: slot}
		msg, err := natsjs.EncodeRecord("passage", ce, data)
		require.NoError(t, err, c.name)
		require.Equal(t, c.subject, msg.Subject)
		require.Equal(t, c.msgID, msg.Header.Get(nats.MsgIdHdr))
		require.Equal(t, c.typ, msg.Header.Get(natsjs.HeaderCEType))
		require.Equal(t, natsjs.SourceSchedule, msg.Header.Get(natsjs.HeaderCESource))
		require.Equal(t, "2026-11-21T12:05:00Z", msg.Header.Get(natsjs.HeaderCETime))
		require.Equal(t, string(data), string(msg.Data))
	}
}

// What is not a record the layout has, or a record of time that is not
// what Encode would make of its event, is refused, saying why.
func TestEncodeRecordRefusesWhatTheLayoutHasNoPlaceFor(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	ce, data := recordOf(t, tick.MinuteHasPassed{Passage: tick.Passage{At: at, Since: at.Add(-time.Minute), EmittedAt: at}})
	changed := func(f func(*natsjs.CloudEvent)) natsjs.CloudEvent {
		c := ce
		f(&c)
		return c
	}
	run := natsjs.CloudEvent{ID: "poll@x", Source: natsjs.SourceSchedule, Type: natsjs.TypeScheduleRun, Subject: "poll", Time: at}
	for _, c := range []struct {
		ce   natsjs.CloudEvent
		data string
		want string
	}{
		{changed(func(c *natsjs.CloudEvent) { c.Type = "Unknown" }), string(data), `record type "Unknown" has no subject`},
		{ce, `{"unit":"minute.x","boundary":"2026-11-21T12:01:00Z"}`, `a MinuteHasPassed record without a unit of time (unit "minute.x")`},
		{ce, `[]`, "a MinuteHasPassed record whose data is not its fields"},
		{ce, `{"unit":"minute"}`, "a MinuteHasPassed record without a boundary"},
		{changed(func(c *natsjs.CloudEvent) { c.Type = natsjs.TypeTicksSkipped }), `{"unit":"minute","from":"2026-11-21T12:01:00Z"}`, "a TicksSkipped record without from or to"},
		{changed(func(c *natsjs.CloudEvent) { c.Type = "HourHasPassed" }), string(data), "a HourHasPassed record of unit minute, whose boundaries are MinuteHasPassed"},
		{changed(func(c *natsjs.CloudEvent) { c.ID = "minute/2026-11-21T12:02:00Z" }), string(data), `whose id "minute/2026-11-21T12:02:00Z" is not its event's id "minute/2026-11-21T12:01:00Z"`},
		{changed(func(c *natsjs.CloudEvent) { c.Source = natsjs.SourceSchedule }), string(data), `from "/passage/schedule": time comes from /passage/tick`},
		{changed(func(c *natsjs.CloudEvent) { c.Subject = "hour" }), string(data), `whose subject "hour" is not its unit minute`},
		{changed(func(c *natsjs.CloudEvent) { c.Time = at.Add(time.Minute) }), string(data), "whose time 2026-11-21T12:02:00Z is not the instant its data is about, 2026-11-21T12:01:00Z"},
		{changed(func(c *natsjs.CloudEvent) { *c = run; c.Subject = "" }), `{}`, "a ScheduleRun record without a schedule"},
		{changed(func(c *natsjs.CloudEvent) { *c = run; c.Source = natsjs.SourceTick }), `{}`, `a ScheduleRun record from "/passage/tick": a schedule's records come from /passage/schedule`},
	} {
		_, err := natsjs.EncodeRecord("passage", c.ce, []byte(c.data))
		require.ErrorIs(t, err, natsjs.ErrUnsupportedEvent, c.want)
		require.ErrorContains(t, err, c.want)
	}
	_, err := natsjs.EncodeRecord("passage.*", ce, data)
	var bad *natsjs.PrefixError
	require.ErrorAs(t, err, &bad)
	require.ErrorIs(t, err, natsjs.ErrInvalidPrefix)
}

// CheckPrefix is the one check of a prefix: each reason names what is
// wrong, and the error wraps ErrInvalidPrefix.
func TestCheckPrefixSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"passage", "acme.time", "a-b_c.ü", "PASSAGE.Time"} {
		require.NoError(t, natsjs.CheckPrefix(ok), ok)
	}
	for prefix, reason := range map[string]string{
		"":           `empty (want tokens such as "passage.time")`,
		"$JS.x":      "subjects starting with $ are the server's ($JS, $SYS, $KV)",
		"a..b":       "token 2 is empty (a leading, trailing or doubled dot)",
		".a":         "token 1 is empty (a leading, trailing or doubled dot)",
		"passage.*":  `token "*" holds the wildcard '*': a prefix names subjects, it does not match them`,
		"a b*":       `token "a b*" holds the wildcard '*': a prefix names subjects, it does not match them`,
		"my passage": `token "my passage" holds white space or a control character`,
		"a\u00a0b":   `token "a\u00a0b" holds white space or a control character`,
		"a\x7fb":     `token "a\x7fb" holds white space or a control character`,
	} {
		err := natsjs.CheckPrefix(prefix)
		require.ErrorIs(t, err, natsjs.ErrInvalidPrefix, "%q", prefix)
		var bad *natsjs.PrefixError
		require.True(t, errors.As(err, &bad), "%q", prefix)
		require.Equal(t, natsjs.PrefixError{Prefix: prefix, Reason: reason}, *bad)
	}
}

// MsgID is the id unless a header could not carry it as it is; two ids
// never share one. StreamName makes a stream's name of a prefix.
func TestMsgIDAndStreamName(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"minute/2026-11-21T12:01:00Z": "minute/2026-11-21T12:01:00Z",
		"zażółć@x":                    "zażółć@x",
		"a\r\nb@x":                    "a%0D%0Ab@x",
		"a%0Ab@x":                     "a%250Ab@x",
		" poll @x":                    "%20poll @x",
		"poll@x ":                     "poll@x%20",
	} {
		require.Equal(t, want, natsjs.MsgID(id), "%q", id)
	}
	require.NotEqual(t, natsjs.MsgID("a\nb"), natsjs.MsgID("a%0Ab"))
	for prefix, want := range map[string]string{"passage": "PASSAGE", "acme.time": "ACME_TIME", `a/b\c`: "A_B_C"} {
		require.Equal(t, want, natsjs.StreamName(prefix))
	}
}
