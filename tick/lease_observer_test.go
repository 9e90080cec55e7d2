package tick

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// leaseEvents records what Observer.LeaseTaken and LeaseLost report.
type leaseEvents struct {
	taken []LeaseTake
	lost  []LeaseLoss
}

func (e *leaseEvents) observer() Observer {
	return Observer{
		LeaseTaken: func(t LeaseTake) { e.taken = append(e.taken, t) },
		LeaseLost:  func(l LeaseLoss) { e.lost = append(e.lost, l) },
	}
}

// A standby taking the lease over is what an operator looks for in the
// log; the observer says when it happens, from whom, and tells the old
// holder it lost it — once each, and not on every renewal.
func TestTheObserverHearsTheLeaseChangeHands(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	store := NewMemoryStore()
	const ttl = 3 * time.Minute
	var a, b leaseEvents
	ta, err := New(&counter{seen: map[string]int{}}, store, WithClock(clock), WithUnits(Minute), WithLease("a", ttl), WithObserver(a.observer()))
	require.NoError(t, err)
	tb, err := New(&counter{seen: map[string]int{}}, store, WithClock(clock), WithUnits(Minute), WithLease("b", ttl), WithObserver(b.observer()))
	require.NoError(t, err)

	require.NoError(t, ta.EmitDue(ctx))
	require.True(t, errors.Is(tb.EmitDue(ctx), ErrNotLeader))
	clock.Advance(time.Minute)
	require.NoError(t, ta.EmitDue(ctx)) // a renewal: nothing to hear
	require.Equal(t, []LeaseTake{{Term: 1, At: epoch, From: ""}}, a.taken)
	require.Empty(t, b.taken)

	// a stalls past the ttl; b, standing by, takes the lease over.
	clock.Advance(ttl + time.Minute)
	require.NoError(t, tb.EmitDue(ctx))
	require.Len(t, b.taken, 1)
	require.Equal(t, "a", b.taken[0].From)
	require.Greater(t, b.taken[0].Term, int64(1))
	require.Equal(t, clock.Now(), b.taken[0].At)

	require.True(t, errors.Is(ta.EmitDue(ctx), ErrNotLeader))
	require.True(t, errors.Is(ta.EmitDue(ctx), ErrNotLeader))
	require.Len(t, a.lost, 1, "once, not at every pass that finds b holding it")
	require.Equal(t, int64(1), a.lost[0].Term)
	require.ErrorIs(t, a.lost[0].Err, ErrLeaseLost)
	require.ErrorContains(t, a.lost[0].Err, `"b" took it`)
	require.Len(t, a.taken, 1)

	require.NoError(t, tb.EmitDue(ctx)) // b renews: nothing new
	require.Len(t, b.taken, 1)
	require.Empty(t, b.lost)
}
