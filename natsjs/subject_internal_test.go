package natsjs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/tick"
)

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		filter string
		want   bool
	}{
		{"passage.time.>", true},
		{"passage.>", true},
		{">", true},
		{"*.time.>", true},
		{"passage.*.>", true},
		{"passage.time.*", false},
		{"passage.time.minute", false},
		{"passage.time", false},
		{"passage.time.minute.>", false},
		{"other.time.>", false},
		{"passage.other.>", false},
	} {
		require.Equal(t, c.want, covers(c.filter, "passage.time"), "covers(%q, passage.time)", c.filter)
	}
}

// Every event a ticker publishes comes back from its message as the same
// value of the same type, offsets with seconds included.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	monrovia, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	at := time.Date(1970, 1, 1, 0, 0, 0, 0, monrovia) // -00:44:30
	for _, u := range tick.Units() {
		// The unit's boundary at or before at (a Monday for the week),
		// and the one before it.
		b := tick.Previous(u, at, monrovia)
		p := tick.Passage{At: b, Since: tick.Previous(u, b.Add(-time.Nanosecond), monrovia), EmittedAt: at.Add(3 * time.Second), CatchUp: true}
		ev, err := tick.NewEvent(u, p)
		require.NoError(t, err)
		msg, err := encode("passage.time", ev)
		require.NoError(t, err)
		require.Equal(t, "passage.time."+string(u), msg.Subject)
		require.Equal(t, ev.ID(), msg.Header.Get("Nats-Msg-Id"))
		back, err := decode("passage.time", wireOf(msg))
		require.NoError(t, err)
		require.IsType(t, ev, back)
		require.Equal(t, ev.Boundary().Format(time.RFC3339Nano), back.(tick.Event).Boundary().Format(time.RFC3339Nano))
		_, offset := back.(tick.Event).Boundary().Zone()
		require.Equal(t, -(44*60 + 30), offset)
		require.True(t, back.(tick.Event).Boundary().Equal(b))
	}
	skipped := tick.TicksSkipped{Unit: tick.Hour, From: at, To: at.Add(5 * time.Hour), Count: 6, Policy: "latest-only", EmittedAt: at.Add(6 * time.Hour)}
	msg, err := encode("passage.time", skipped)
	require.NoError(t, err)
	require.Equal(t, "passage.time.skipped.hour", msg.Subject)
	require.Equal(t, "skipped/hour/1970-01-01T00:44:30Z..1970-01-01T05:44:30Z", msg.Header.Get("Nats-Msg-Id"))
	back, err := decode("passage.time", wireOf(msg))
	require.NoError(t, err)
	require.IsType(t, skipped, back)
	require.True(t, back.(tick.TicksSkipped).From.Equal(skipped.From))
	require.Equal(t, skipped.Count, back.(tick.TicksSkipped).Count)

	_, err = encode("passage.time", "a string")
	require.ErrorIs(t, err, ErrUnsupportedEvent)
	for _, bad := range []struct{ subject, data string }{
		{"other.time.minute", `{}`},
		{"passage.time.fortnight", `{"At":"2026-01-01T00:00:00Z"}`},
		{"passage.time.minute", `not json`},
		{"passage.time.skipped.hour", `{"Unit":"day"}`},
	} {
		_, err := decode("passage.time", wire{subject: bad.subject, data: []byte(bad.data)})
		require.ErrorIs(t, err, ErrUndecodable, "%s %s", bad.subject, bad.data)
	}
}

func TestRetryBackoffDoublesUpToItsMax(t *testing.T) {
	c := consumerDefaults()
	require.NoError(t, WithRetryBackoff(time.Second, 10*time.Second)(&c))
	var got []time.Duration
	for delivered := uint64(1); delivered <= 6; delivered++ {
		got = append(got, c.backoff(delivered))
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}, got)
	require.Equal(t, 10*time.Second, c.backoff(1<<40), "no overflow after many deliveries")
}

func TestOverlapsAsTheServerMatchesSubjects(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"passage.>", "passage.demo.time.>", true},
		{"passage.>", "passage", false},
		{"passage.time.>", "passage.runs.>", false},
		{"passage.*.minute", "passage.time.>", true},
		{"*.time.>", "passage.time.minute", true},
		{">", "a", true},
		{"a.b", "a.b", true},
		{"a.b", "a.b.c", false},
		{"a.*", "a.b.c", false},
		{"a.*.c", "a.b.>", true},
		{"services.time.>", "passage.>", false},
	} {
		require.Equal(t, c.want, overlaps(c.a, c.b), "%s %s", c.a, c.b)
		require.Equal(t, c.want, overlaps(c.b, c.a), "%s %s", c.b, c.a)
	}
}
