package tick

import (
	"context"

	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// TestDurationOptionsRefuseWhatCannotWork: durations that would spin (a
// lease renewed every third of a nanosecond, a retry loop without pause)
// or overflow an instant are refused with a message naming the option and
// the value; the bounds themselves are accepted.
func TestDurationOptionsRefuseWhatCannotWork(t *testing.T) {
	t.Parallel()
	century := MaxDuration
	cases := []struct {
		name string
		opt  Option
		msg  string // "" when the option is accepted
	}{
		{"lease ttl negative", WithLease("a", -time.Second), "WithLease: ttl -1s must be positive"},
		{"lease ttl 1ns", WithLease("a", time.Nanosecond), "WithLease: ttl 1ns is too short: at least 1s"},
		{"lease ttl just short", WithLease("a", MinLeaseTTL-time.Millisecond), "WithLease: ttl 999ms is too short"},
		{"lease ttl minimum", WithLease("a", MinLeaseTTL), ""},
		{"lease ttl maximum", WithLease("a", century), ""},
		{"lease ttl too long", WithLease("a", century+time.Hour), "WithLease: ttl 876001h0m0s is too long: at most 876000h0m0s (100 years)"},
		{"lease ttl at the top of Duration", WithLease("a", time.Duration(1<<63-1)), "WithLease: ttl 2562047h47m16.854775807s is too long"},
		{"retry 1ns", WithRetryBackoff(time.Nanosecond, time.Second), "WithRetryBackoff: initial delay 1ns is too short: at least 1ms"},
		{"retry negative", WithRetryBackoff(-time.Second, time.Second), "WithRetryBackoff: initial delay -1s must be positive"},
		{"retry max too long", WithRetryBackoff(time.Second, century+1), "WithRetryBackoff: max delay 876000h0m0.000000001s is too long"},
		{"retry bounds", WithRetryBackoff(MinRetryBackoff, century), ""},
		{"window too long", WithCatchUp(Day, All{Window: century + time.Hour, Max: 1}), "All.Window 876001h0m0s is too long"},
		{"window negative", WithCatchUp(Day, All{Window: -time.Hour, Max: 1}), "All.Window -1h0m0s must be positive"},
		{"window maximum", WithCatchUp(Day, All{Window: century, Max: 1}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(&recorder{}, NewMemoryStore(), tc.opt)
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidOption)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

// TestLongestLeaseFitsTheStore takes a lease of MaxDuration in each store:
// its expiry is in the future, not wrapped around into the past, and
// another replica cannot take it.
func TestLongestLeaseFitsTheStore(t *testing.T) {
	t.Parallel()
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, second := f.open(t)
			l, err := s.AcquireLease(ctx, "a", epoch, MaxDuration)
			require.NoError(t, err)
			require.True(t, l.Expires.Equal(epoch.Add(MaxDuration)), "expires %v", l.Expires)
			other, err := second().AcquireLease(ctx, "b", epoch.Add(time.Hour), time.Minute)
			require.NoError(t, err)
			require.Equal(t, "a", other.Holder)
		})
	}
}

// TestSQLStoreRefusesAnInstantItCannotHold: a lease whose expiry would
// wrap around int64 nanoseconds is an error, not a lease that expired in
// 1677.
func TestSQLStoreRefusesAnInstantItCannotHold(t *testing.T) {
	t.Parallel()
	for _, f := range storeFactories()[1:] {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, _ := f.open(t)
			_, err := s.AcquireLease(ctx, "a", epoch, time.Duration(1<<63-1))
			require.ErrorContains(t, err, "out of the storable range")
			require.ErrorContains(t, s.Advance(ctx, Day, time.Time{}, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), 0), "out of the storable range")
		})
	}
}

// TestEmitUntilSaysWhyThereIsNothingToBackfill: a zero until, or one at or
// behind every cursor, emits nothing and says so, naming each cursor.
func TestEmitUntilSaysWhyThereIsNothingToBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	store := NewMemoryStore()
	hour := epoch.Truncate(time.Hour)
	require.NoError(t, store.Advance(ctx, Hour, time.Time{}, hour, 0))
	rec := &recorder{}
	tk, err := New(rec, store, WithClock(clock), WithUnits(Hour, Day))
	require.NoError(t, err)

	err = tk.EmitUntil(ctx, time.Time{})
	require.ErrorIs(t, err, ErrNothingToBackfill)
	require.EqualError(t, err, "tick: nothing to backfill: until is the zero time (0001-01-01T00:00:00Z), before every cursor")

	err = tk.EmitUntil(ctx, hour.Add(-3*time.Hour))
	require.ErrorIs(t, err, ErrNothingToBackfill)
	require.EqualError(t, err, "tick: nothing to backfill: no boundary lies after a cursor and at or before 2025-12-31T21:00:00Z "+
		"(hour cursor at 2026-01-01T00:00:00Z; day has no cursor yet (a first run records one))")
	events, skips := rec.take()
	require.Empty(t, events)
	require.Empty(t, skips)
	require.Equal(t, int64(0), tk.Stats().StoreFailures)
}

// TestStopReleasesTheLeaseOfARunOnceTicker: a ticker that was never
// started but emitted with EmitDue or EmitUntil under a lease releases it
// on Stop, so the next run-once process, with another holder id, takes it
// at once; a ticker that never held it releases nothing.
func TestStopReleasesTheLeaseOfARunOnceTicker(t *testing.T) {
	t.Parallel()
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, second := f.open(t)
			clock := clockwork.NewFakeClockAt(epoch)
			once := func(holder string, s CursorStore) *Ticker {
				tk, err := New(&recorder{}, s, WithClock(clock), WithUnits(Hour), WithLease(holder, time.Hour), WithLogger(discard))
				require.NoError(t, err)
				return tk
			}

			first := once("first", store)
			require.NoError(t, first.EmitDue(ctx))
			other := once("other", second())
			require.ErrorIs(t, other.EmitDue(ctx), ErrNotLeader, "the lease is held")
			require.NoError(t, other.Stop(ctx), "a standby has nothing to release")
			require.NoError(t, first.Stop(ctx))
			require.NoError(t, first.Stop(ctx), "twice is harmless")

			clock.Advance(time.Hour)
			backfill := once("backfill", second())
			require.NoError(t, backfill.EmitUntil(ctx, clock.Now()), "taken at once, long before the hour's lease expired")
			require.NoError(t, backfill.Stop(ctx))
			next := once("next", store)
			require.NoError(t, next.EmitDue(ctx), "EmitUntil's lease was released too")
			require.NoError(t, next.Stop(ctx))
		})
	}
}
