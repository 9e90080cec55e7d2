package tick

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// TestHealthReportsFailingPassesUntilOneSucceeds fails the publisher for
// two wake-ups: Health names the failure and when it began, then turns nil
// at the retry that succeeds.
func TestHealthReportsFailingPassesUntilOneSucceeds(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(epoch)
	tk, rec := setup(t, clock, NewMemoryStore(), WithUnits(Minute), WithRetryBackoff(time.Second, time.Minute))
	advance(t, clock, 0, tk) // the first pass records the start
	require.NoError(t, tk.Health(), "healthy before anything failed")

	down := errors.New("bus down")
	rec.mu.Lock()
	rec.fail = func(any) error { return down }
	rec.mu.Unlock()
	advance(t, clock, 30*time.Second, tk) // 00:01:00: fails
	failedAt := clock.Now()
	advance(t, clock, time.Second, tk) // the retry fails too
	err := tk.Health()
	require.ErrorIs(t, err, ErrUnhealthy)
	require.ErrorIs(t, err, down)
	require.ErrorContains(t, err, "since "+timefmt.Format(failedAt)+" (2 failed passes in a row, the last at "+timefmt.Format(clock.Now())+")")
	require.ErrorContains(t, err, "publish minute/2026-01-01T00:01:00Z")

	rec.mu.Lock()
	rec.fail = nil
	rec.mu.Unlock()
	advance(t, clock, 2*time.Second, tk) // the next retry succeeds
	require.NoError(t, tk.Health())
	events, _ := rec.take()
	require.Len(t, events, 1)
}

func TestHealthReportsStoreFailuresAndIgnoresStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	broken, err := New(&recorder{}, brokenStore{NewMemoryStore()}, WithClock(clock), WithUnits(Minute))
	require.NoError(t, err)
	require.Error(t, broken.EmitDue(ctx))
	require.ErrorContains(t, broken.Health(), "disk on fire")

	store := NewMemoryStore()
	leader, err := New(&recorder{}, store, WithClock(clock), WithUnits(Minute), WithLease("a", time.Minute))
	require.NoError(t, err)
	standby, err := New(&recorder{}, store, WithClock(clock), WithUnits(Minute), WithLease("b", time.Minute))
	require.NoError(t, err)
	require.NoError(t, leader.EmitDue(ctx))
	require.ErrorIs(t, standby.EmitDue(ctx), ErrNotLeader)
	require.NoError(t, standby.Health(), "a standby is healthy: the leader emits")
}

// holdsPublisher asks its ticker, during every publish, whether it holds
// the lease.
type holdsPublisher struct {
	t    *Ticker
	seen []bool
}

func (p *holdsPublisher) Publish(context.Context, ...any) error {
	p.seen = append(p.seen, p.t.HoldsLease())
	return nil
}

// HoldsLease follows the lease as the store confirmed it: the holder
// while its lease runs (during a pass too), a standby not until it takes
// the lease, nobody once it lapsed or was released.
func TestHoldsLeaseFollowsTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	store := NewMemoryStore()
	pa := &holdsPublisher{}
	a, err := New(pa, store, WithClock(clock), WithUnits(Minute), WithLease("a", time.Minute), WithLogger(discard))
	require.NoError(t, err)
	pa.t = a
	b, err := New(&recorder{}, store, WithClock(clock), WithUnits(Minute), WithLease("b", time.Minute), WithLogger(discard))
	require.NoError(t, err)
	require.False(t, a.HoldsLease(), "nothing taken yet")

	require.NoError(t, a.EmitDue(ctx)) // records the start
	clock.Advance(time.Minute)
	require.NoError(t, a.EmitDue(ctx))
	require.Equal(t, []bool{true}, pa.seen, "during its pass")
	require.True(t, a.HoldsLease())
	require.ErrorIs(t, b.EmitDue(ctx), ErrNotLeader)
	require.False(t, b.HoldsLease(), "a standby")

	clock.Advance(59 * time.Second)
	require.True(t, a.HoldsLease(), "a ttl is not over")
	clock.Advance(time.Second)
	require.False(t, a.HoldsLease(), "lapsed: a stalled holder may have a successor")

	require.NoError(t, b.EmitDue(ctx))
	require.True(t, b.HoldsLease(), "the standby took it")
	require.ErrorIs(t, a.EmitDue(ctx), ErrNotLeader)
	require.False(t, a.HoldsLease())
	require.NoError(t, b.Stop(ctx))
	require.False(t, b.HoldsLease(), "released")

	free, err := New(&recorder{}, NewMemoryStore(), WithClock(clock), WithUnits(Minute))
	require.NoError(t, err)
	require.True(t, free.HoldsLease(), "without WithLease every ticker emits")
}
