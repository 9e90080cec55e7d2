package sink_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

// The passage of time leaves the sink as natsjs lays it out — the
// subject, tick's JSON and the Nats-Msg-Id a natsjs.Publisher of the same
// event would send, byte for byte — rebuilt from the record's body the
// outbox stored, for every unit, offsets with seconds and catch-up
// included; the record's key and natsjs's id are the same string.
func TestNATSTimeIsLaidOutAsNatsjsLaysItOut(t *testing.T) {
	t.Parallel()
	monrovia, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	at := time.Date(1970, 1, 1, 0, 0, 0, 0, monrovia) // -00:44:30
	p := tick.Passage{At: at, Since: at.Add(-time.Hour), EmittedAt: at.Add(3 * time.Second), CatchUp: true}
	var events []any
	for _, u := range tick.Units() {
		ev, err := tick.NewEvent(u, p)
		require.NoError(t, err)
		events = append(events, ev)
	}
	first, err := tick.NewEvent(tick.Day, tick.Passage{At: at, EmittedAt: at}) // no previous boundary
	require.NoError(t, err)
	events = append(events, first,
		tick.TicksSkipped{Unit: tick.Hour, From: at, To: at.Add(5 * time.Hour), Count: 6, Policy: "latest-only", EmittedAt: at.Add(6 * time.Hour)})
	for _, e := range events {
		body, env, err := sink.Marshal(e)
		require.NoError(t, err)
		got, err := sink.NATSMsg("acme.time", env.ID, env.Type, body)
		require.NoError(t, err, "%s", body)
		want, err := natsjs.Encode("acme.time", e)
		require.NoError(t, err)
		require.Equal(t, want.Subject, got.Subject)
		require.Equal(t, env.ID, want.Header.Get(jetstream.MsgIDHeader), "the outbox's key is natsjs's id")
		require.Equal(t, env.ID, got.Header.Get(jetstream.MsgIDHeader))
		require.Equal(t, string(want.Data), string(got.Data))
		subject, err := sink.NATSSubject("acme.time", env.Type, body)
		require.NoError(t, err)
		require.Equal(t, want.Subject, subject)
	}
}

// A stored record whose type, body and key do not agree is refused,
// saying which, rather than published where no consumer expects it.
func TestNATSRefusesATimeRecordThatDoesNotAgreeWithItself(t *testing.T) {
	t.Parallel()
	body, env, err := sink.Marshal(minute(1))
	require.NoError(t, err)
	_, err = sink.NATSMsg("passage", env.ID, "HourHasPassed", body)
	require.ErrorContains(t, err, `the record's key "minute/2026-11-21T12:01:00Z" and type HourHasPassed are not its event's, "minute/2026-11-21T12:01:00Z" and MinuteHasPassed`)
	_, err = sink.NATSMsg("passage", "minute/2026-11-21T12:02:00Z", env.Type, body)
	require.ErrorContains(t, err, `the record's key "minute/2026-11-21T12:02:00Z" and type MinuteHasPassed are not its event's, "minute/2026-11-21T12:01:00Z"`)
	// An envelope whose type and data disagree: the data of a minute
	// under an hour's type and id.
	forged := strings.NewReplacer(`"type":"MinuteHasPassed"`, `"type":"HourHasPassed"`, `"id":"minute/`, `"id":"hour/`).Replace(string(body))
	_, err = sink.NATSMsg("passage", strings.Replace(env.ID, "minute", "hour", 1), "HourHasPassed", []byte(forged))
	require.ErrorContains(t, err, "a HourHasPassed record of unit minute, whose boundaries are MinuteHasPassed")
	// Records stored before the envelope, which lack a field.
	_, err = sink.NATSMsg("passage", env.ID, env.Type, []byte(`{"type":"MinuteHasPassed","id":"minute/2026-11-21T12:01:00Z","unit":"minute"}`))
	require.ErrorContains(t, err, "a MinuteHasPassed record without a boundary")
	_, err = sink.NATSMsg("passage", "k", "TicksSkipped", []byte(`{"type":"TicksSkipped","id":"k","unit":"minute"}`))
	require.ErrorContains(t, err, "a TicksSkipped record without from or to")
	_, err = sink.NATSMsg("passage.*", env.ID, env.Type, body)
	require.ErrorIs(t, err, natsjs.ErrInvalidPrefix)
}
