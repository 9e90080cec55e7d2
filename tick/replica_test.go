package tick

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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

// slowPublisher counts publications per identity, shared by two replicas,
// and advances the fake clock by perEvent inside each publish, as a slow
// receiver would. hook runs inside the publish of the hookAt-th event.
type slowPublisher struct {
	seen     *counter
	clock    *clockwork.FakeClock
	perEvent time.Duration
	n        int
	hookAt   int
	hook     func()
}

func (p *slowPublisher) Publish(ctx context.Context, events ...any) error {
	_ = p.seen.Publish(ctx, events...)
	p.clock.Advance(p.perEvent)
	if p.n++; p.n == p.hookAt {
		p.hook()
	}
	return nil
}

// TestLeaseIsCheckedBeforeEveryPublish runs a long catch-up on replica a
// with a lease of one minute and a receiver taking a second per event, and
// lets replica b try to take over in the middle. While a is healthy it
// renews the lease as it goes and b is refused: no duplicates. When a
// stalls inside one publish for longer than the lease, b takes over; a
// then publishes nothing more, and b repeats only what a published since
// its last renewal — at most ttl/3 of events (documented on WithLease).
func TestLeaseIsCheckedBeforeEveryPublish(t *testing.T) {
	t.Parallel()
	const (
		missed   = 600
		ttl      = time.Minute
		perEvent = time.Second
	)
	for _, f := range storeFactories() {
		for _, stall := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stall=%v", f.name, stall), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				storeA, second := f.open(t)
				clock := clockwork.NewFakeClockAt(epoch)
				from := epoch.Truncate(time.Minute).Add(-missed * time.Minute)
				require.NoError(t, storeA.Advance(ctx, Minute, time.Time{}, from, 0))
				seen := &counter{seen: map[string]int{}}
				replica := func(holder string, store CursorStore, pub Publisher) *Ticker {
					tk, err := New(pub, store, WithClock(clock), WithUnits(Minute), WithLease(holder, ttl), WithLogger(discard))
					require.NoError(t, err)
					return tk
				}
				b := replica("b", second(), &slowPublisher{seen: seen, clock: clock})
				pubA := &slowPublisher{seen: seen, clock: clock, perEvent: perEvent, hookAt: 110}
				var errB error
				pubA.hook = func() {
					if stall {
						clock.Advance(2 * ttl) // a is paused inside this publish
					}
					errB = b.EmitDue(ctx)
				}
				errA := replica("a", storeA, pubA).EmitDue(ctx)

				seen.mu.Lock()
				defer seen.mu.Unlock()
				dups := 0
				for _, n := range seen.seen {
					require.LessOrEqual(t, n, 2)
					if n == 2 {
						dups++
					}
				}
				if !stall {
					require.NoError(t, errA)
					require.ErrorIs(t, errB, ErrNotLeader)
					require.Equal(t, missed, pubA.n)
					require.Zero(t, dups)
					return
				}
				require.ErrorIs(t, errA, ErrLeaseLost)
				require.NoError(t, errB)
				require.Equal(t, pubA.hookAt, pubA.n, "a publishes nothing after losing the lease")
				require.Positive(t, dups, "the event in flight is repeated")
				require.LessOrEqual(t, dups, int(ttl/3/perEvent), "b repeats at most what a published since its last renewal")
				for b := Next(Minute, from, nil); !b.After(from.Add(missed * time.Minute)); b = Next(Minute, b, nil) {
					require.Positive(t, seen.seen[MinuteHasPassed{Passage{At: b}}.ID()], "%v published", b)
				}
			})
		}
	}
}

// TestLeaseIsRenewedBetweenBoundaries runs a leader publishing days with a
// lease of 30 s: it renews the lease every 10 s without emitting anything,
// so the lease never lapses while it runs. A standby wakes when the lease
// it sees expires, not at its next boundary, and says so once per holder.
func TestLeaseIsRenewedBetweenBoundaries(t *testing.T) {
	t.Parallel()
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, second := f.open(t)
			status := store.(leaseReader)
			clock := clockwork.NewFakeClockAt(epoch)
			const ttl = 30 * time.Second

			// A replica that died without releasing the lease holds it.
			ghost, err := store.AcquireLease(ctx, "ghost", clock.Now(), ttl)
			require.NoError(t, err)
			logs := &logCounter{}
			standby, rec := setup(t, clock, second(), WithUnits(Day), WithLease("b", ttl),
				WithLogger(slog.New(logs)))
			armed, err := standby.waitArmed(ctx)
			require.NoError(t, err)
			require.True(t, armed.Equal(ghost.Expires), "the standby wakes when the lease expires: %v", armed)
			// The ghost comes back to life and renews once: the standby looks
			// again at the old expiry and waits for the new one.
			_, err = store.AcquireLease(ctx, "ghost", clock.Now().Add(20*time.Second), ttl)
			require.NoError(t, err)
			advance(t, clock, 30*time.Second, standby)
			armed, err = standby.waitArmed(ctx)
			require.NoError(t, err)
			require.True(t, armed.Equal(epoch.Add(50*time.Second)), "armed for %v", armed)
			require.Equal(t, 1, logs.count("standby: lease held by ghost"), "logged once per holder")

			advance(t, clock, 20*time.Second, standby)
			for range 6 * 10 { // ten minutes
				lease, err := status.Lease(ctx)
				require.NoError(t, err)
				require.Equal(t, "b", lease.Holder)
				require.True(t, lease.Expires.After(clock.Now()), "the running leader's lease is live at %v: %v", clock.Now(), lease)
				advance(t, clock, 10*time.Second, standby)
			}
			events, skips := rec.take()
			require.Empty(t, events, "renewals emit nothing")
			require.Empty(t, skips)
		})
	}
}

// leaseReader is the stores' read of the current lease, which the tests
// use to check who holds it.
type leaseReader interface {
	Lease(context.Context) (Lease, error)
}

// logCounter is a slog.Handler that keeps the messages logged.
type logCounter struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCounter) WithGroup(string) slog.Handler            { return l }

func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

func (l *logCounter) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

// TestStopReleasesTheLease stops the leader; the lease is free at once and
// the next replica to start takes it over, with a new term.
func TestStopReleasesTheLease(t *testing.T) {
	t.Parallel()
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, second := f.open(t)
			status := store.(leaseReader)
			clock := clockwork.NewFakeClockAt(epoch)
			a, err := New(&recorder{}, store, WithClock(clock), WithUnits(Minute), WithLease("a", time.Hour), WithLogger(discard))
			require.NoError(t, err)
			require.NoError(t, a.Start(ctx))
			advance(t, clock, time.Minute, a)
			lease, err := status.Lease(ctx)
			require.NoError(t, err)
			require.Equal(t, "a", lease.Holder)

			require.NoError(t, a.Stop(ctx))
			lease, err = status.Lease(ctx)
			require.NoError(t, err)
			require.Empty(t, lease.Holder, "released")

			b, rec := setup(t, clock, second(), WithUnits(Minute), WithLease("b", time.Hour))
			advance(t, clock, time.Minute, b)
			lease, err = status.Lease(ctx)
			require.NoError(t, err)
			require.Equal(t, "b", lease.Holder)
			require.Equal(t, int64(2), lease.Term)
			events, _ := rec.take()
			require.Len(t, events, 1, "b takes over at once, without waiting for a's hour")
		})
	}
}
