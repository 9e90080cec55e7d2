package tick

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// counter counts publications per event identity, across replicas.
type counter struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *counter) Publish(_ context.Context, events ...any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range events {
		c.seen[e.(Event).ID()]++
	}
	return nil
}

// TestReplicasEmitEachBoundaryOnce runs three tickers, each with its own
// connection to one database, kills the leader twice and starts a
// replacement, and checks that every minute was published exactly once.
func TestReplicasEmitEachBoundaryOnce(t *testing.T) {
	t.Parallel()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			status, another := openSQLStore(t, backend)
			clock := clockwork.NewFakeClockAt(epoch)
			pub := &counter{seen: map[string]int{}}
			replicas := map[string]*Ticker{}
			start := func(holder string) {
				tk, err := New(pub, another(), WithClock(clock), WithUnits(Minute),
					WithLease(holder, 3*time.Minute), WithLogger(discard))
				require.NoError(t, err)
				require.NoError(t, tk.Start(ctx))
				t.Cleanup(func() { require.NoError(t, tk.Stop(ctx)) })
				replicas[holder] = tk
			}
			run := func(minutes int) {
				for range minutes {
					var live []*Ticker
					for _, tk := range replicas {
						live = append(live, tk)
					}
					advance(t, clock, time.Minute, live...)
				}
			}
			killLeader := func() string {
				lease, err := status.Lease(ctx)
				require.NoError(t, err)
				leader := replicas[lease.Holder]
				require.NotNil(t, leader, "leader %q", lease.Holder)
				require.NoError(t, leader.Stop(ctx))
				delete(replicas, lease.Holder)
				return lease.Holder
			}

			start("a")
			start("b")
			start("c")
			run(10)
			first := killLeader()
			start("d")
			run(10) // the lease lapses after 3 minutes; another replica catches up
			second := killLeader()
			require.NotEqual(t, first, second)
			run(10)

			lease, err := status.Lease(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(3), lease.Term, "the lease changed hands twice")

			pub.mu.Lock()
			defer pub.mu.Unlock()
			require.Len(t, pub.seen, 30)
			for i := 1; i <= 30; i++ {
				id := MinuteHasPassed{Passage{At: epoch.Truncate(time.Minute).Add(time.Duration(i) * time.Minute)}}.ID()
				require.Equal(t, 1, pub.seen[id], id)
			}
		})
	}
}
