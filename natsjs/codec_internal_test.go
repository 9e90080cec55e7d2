package natsjs

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/tick"
)

// Encode is the layout a Publisher sends, given to publishers of their
// own: same subject, body and Nats-Msg-Id; it checks the prefix, which a
// Publisher checked once in NewPublisher.
func TestEncodeIsWhatAPublisherSends(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC)
	minute := tick.MinuteHasPassed{Passage: tick.Passage{At: at, Since: at.Add(-time.Minute), EmittedAt: at.Add(time.Second)}}
	skipped := tick.TicksSkipped{Unit: tick.Minute, From: at, To: at.Add(3 * time.Minute), Count: 4, Policy: "latest-only", EmittedAt: at.Add(4 * time.Minute)}
	for _, c := range []struct {
		event       any
		subject, id string
	}{
		{minute, "acme.time.minute", "minute/2026-11-26T12:01:00Z"},
		{skipped, "acme.time.skipped.minute", "skipped/minute/2026-11-26T12:01:00Z..2026-11-26T12:04:00Z"},
	} {
		got, err := Encode("acme.time", c.event)
		require.NoError(t, err)
		want, err := encode("acme.time", c.event)
		require.NoError(t, err)
		require.Equal(t, c.subject, got.Subject)
		require.Equal(t, c.id, got.Header.Get("Nats-Msg-Id"))
		require.Equal(t, want.Subject, got.Subject)
		require.Equal(t, want.Header, got.Header)
		require.Equal(t, string(want.Data), string(got.Data))
	}
	for _, prefix := range []string{"", "acme.*", "acme..time", "acme time"} {
		_, err := Encode(prefix, minute)
		require.ErrorIs(t, err, ErrInvalidPrefix, "%q", prefix)
	}
	_, err := Encode("acme.time", tick.Passage{At: at})
	require.ErrorIs(t, err, ErrUnsupportedEvent, "a Passage is no event of a unit")
}

// Deeper subjects under the prefix are someone else's (a schedule's runs
// from "ticker run --nats"), not undecodable time: a Consumer passes them
// by instead of terminating them. A unit's subject and a skip report's
// stay what they were, bad bodies and unknown units undecodable.
func TestDecodeTellsWhatIsNotTime(t *testing.T) {
	for _, subject := range []string{
		"passage.time.schedule.poll",
		"passage.time.schedule.poll.skipped",
		"passage.time.minute.extra",
	} {
		_, err := decode("passage.time", wire{subject: subject, data: []byte(`{"type":"ScheduleRun"}`)})
		require.ErrorIs(t, err, errNotTime, subject)
		require.NotErrorIs(t, err, ErrUndecodable, subject)
	}
	for _, bad := range []struct{ subject, data string }{
		{"passage.time.fortnight", `{"At":"2026-01-01T00:00:00Z"}`},
		{"passage.time.skipped.hour.x", `{"Unit":"hour"}`},
		{"passage.time.schedule", `{"type":"ScheduleRun"}`},
	} {
		_, err := decode("passage.time", wire{subject: bad.subject, data: []byte(bad.data)})
		require.ErrorIs(t, err, ErrUndecodable, bad.subject)
		require.NotErrorIs(t, err, errNotTime, bad.subject)
	}
}

// wireOf is the message decode reads of msg.
func wireOf(msg *nats.Msg) wire {
	return wire{subject: msg.Subject, header: msg.Header, data: msg.Data}
}
