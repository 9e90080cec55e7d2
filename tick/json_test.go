package tick

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// TestEventsRoundTripThroughJSONWithSecondsOffsets marshals a day that
// passed in Africa/Monrovia in 1960, on local mean time (-00:44:30): the
// instants come back equal, offset seconds included, where encoding/json's
// own time format would have dropped them and named other instants.
func TestEventsRoundTripThroughJSONWithSecondsOffsets(t *testing.T) {
	t.Parallel()
	monrovia := loadZone(t, "Africa/Monrovia")
	at := time.Date(1960, 3, 2, 0, 0, 0, 0, monrovia)
	day := DayHasPassed{Passage{At: at, Since: at.AddDate(0, 0, -1), EmittedAt: at.Add(1500 * time.Millisecond), CatchUp: true}}

	b, err := json.Marshal(day)
	require.NoError(t, err)
	require.JSONEq(t, `{"At":"1960-03-02T00:00:00-00:44:30","Since":"1960-03-01T00:00:00-00:44:30",
		"EmittedAt":"1960-03-02T00:00:01.5-00:44:30","CatchUp":true}`, string(b))
	var back DayHasPassed
	require.NoError(t, json.Unmarshal(b, &back))
	requireSameInstant(t, day.At, back.At)
	requireSameInstant(t, day.Since, back.Since)
	requireSameInstant(t, day.EmittedAt, back.EmittedAt)
	require.True(t, back.CatchUp)
	require.Equal(t, day.ID(), back.ID())

	// Whole-minute offsets and UTC print as RFC 3339, as before.
	b, err = json.Marshal(HourHasPassed{Passage{At: time.Date(2026, 3, 29, 3, 0, 0, 0, loadZone(t, "Europe/Warsaw"))}})
	require.NoError(t, err)
	require.JSONEq(t, `{"At":"2026-03-29T03:00:00+02:00","Since":"0001-01-01T00:00:00Z","EmittedAt":"0001-01-01T00:00:00Z","CatchUp":false}`, string(b))

	skip := TicksSkipped{Unit: Day, From: at.AddDate(0, 0, -3), To: at.AddDate(0, 0, -1), Count: 3, Policy: "latest-only", EmittedAt: at}
	b, err = json.Marshal(skip)
	require.NoError(t, err)
	require.JSONEq(t, `{"Unit":"day","From":"1960-02-28T00:00:00-00:44:30","To":"1960-03-01T00:00:00-00:44:30",
		"Count":3,"Policy":"latest-only","EmittedAt":"1960-03-02T00:00:00-00:44:30"}`, string(b))
	var skipBack TicksSkipped
	require.NoError(t, json.Unmarshal(b, &skipBack))
	requireSameInstant(t, skip.From, skipBack.From)
	requireSameInstant(t, skip.To, skipBack.To)
	requireSameInstant(t, skip.EmittedAt, skipBack.EmittedAt)
	require.Equal(t, skip.Unit, skipBack.Unit)
	require.Equal(t, skip.Count, skipBack.Count)
	require.Equal(t, skip.Policy, skipBack.Policy)
}

func TestPassageReadsRFC3339AndRejectsGarbage(t *testing.T) {
	t.Parallel()
	var p Passage
	require.NoError(t, json.Unmarshal([]byte(`{"At":"2026-01-01T00:00:00Z","Since":null,"CatchUp":true}`), &p))
	require.True(t, p.At.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	require.True(t, p.Since.IsZero())
	require.True(t, p.CatchUp)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"At":"yesterday"}`), &p), `"yesterday" is not an RFC 3339 instant`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"At":12}`), &p), "must be a JSON string")
}

// requireSameInstant checks the instant and the offset it is written in.
func requireSameInstant(t *testing.T, want, got time.Time) {
	t.Helper()
	require.True(t, want.Equal(got), "want %s, got %s", timefmt.Format(want), timefmt.Format(got))
	_, wantOff := want.Zone()
	_, gotOff := got.Zone()
	require.Equal(t, wantOff, gotOff, "offset of %s", timefmt.Format(got))
}

func loadZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// TestErrorsPrintInstantsLosslessly: errors that name an instant print it
// with timefmt.Format, so Monrovia's local mean time keeps its seconds.
func TestErrorsPrintInstantsLosslessly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	monrovia := loadZone(t, "Africa/Monrovia")
	day := func(d int) time.Time { return time.Date(1960, 3, d, 0, 0, 0, 0, monrovia) }
	store := NewMemoryStore()
	require.NoError(t, store.Advance(ctx, Day, time.Time{}, day(1), 0))
	require.ErrorContains(t, store.Advance(ctx, Day, day(2), day(3), 0),
		"day cursor is 1960-03-01T00:00:00-00:44:30, expected 1960-03-02T00:00:00-00:44:30")

	rec := &recorder{fail: func(e any) error {
		if _, ok := e.(TicksSkipped); ok {
			return errors.New("receiver down")
		}
		return nil
	}}
	tk, err := New(rec, store, WithClock(clockwork.NewFakeClockAt(day(5).Add(time.Hour))), WithLocation(monrovia),
		WithUnits(Day), WithCatchUp(Day, LatestOnly{}), WithLogger(discard))
	require.NoError(t, err)
	require.ErrorContains(t, tk.EmitDue(ctx), "publish day skip report 1960-03-02T00:00:00-00:44:30..1960-03-04T00:00:00-00:44:30: receiver down")
	require.ErrorContains(t, tk.EmitUntil(ctx, day(1)), "(day cursor at 1960-03-01T00:00:00-00:44:30)")
	require.ErrorContains(t, tk.EmitUntil(ctx, day(9)), "EmitUntil(1960-03-09T00:00:00-00:44:30) with the clock at 1960-03-05T01:00:00-00:44:30")
}

func TestJSONTimeRoundTripsOffsetsWithSeconds(t *testing.T) {
	t.Parallel()
	monrovia := loadZone(t, "Africa/Monrovia")
	at := time.Date(1960, 1, 2, 0, 0, 0, 0, monrovia)
	b, err := json.Marshal(struct{ At *JSONTime }{JSONTimeOf(at)})
	require.NoError(t, err)
	require.JSONEq(t, `{"At":"1960-01-02T00:00:00-00:44:30"}`, string(b))
	var back struct{ At *JSONTime }
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, back.At.Equal(at), "%s is not %s", back.At, at)
	_, offset := back.At.Zone()
	require.Equal(t, -(44*60 + 30), offset)

	require.Nil(t, JSONTimeOf(time.Time{}), "the zero time is null")
	b, err = json.Marshal(struct{ At *JSONTime }{JSONTimeOf(time.Time{})})
	require.NoError(t, err)
	require.JSONEq(t, `{"At":null}`, string(b))
	require.ErrorContains(t, json.Unmarshal([]byte(`{"At":12}`), &back), "must be a JSON string")
}
