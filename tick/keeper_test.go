package tick

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// slowHandler is a Publisher whose first publish blocks until release is closed
// or, unless ignoreCtx, until its ctx ends — a slow or stalled handler.
// Later publishes return at once.
type slowHandler struct {
	entered   chan struct{} // closed when the first publish starts
	release   chan struct{} // closing it lets the blocked publish return
	cancelled chan struct{} // closed when the blocked publish's ctx ends
	ignoreCtx bool
	once      sync.Once

	mu    sync.Mutex
	n     int   // publish calls
	cause error // context.Cause of the ctx the blocked publish gave up on
}

func newSlowHandler(t *testing.T) *slowHandler {
	g := &slowHandler{entered: make(chan struct{}), release: make(chan struct{}), cancelled: make(chan struct{})}
	// Whatever the test asserts, no publish stays blocked after it.
	t.Cleanup(g.open)
	return g
}

// open lets the blocked publish return.
func (g *slowHandler) open() { g.once.Do(func() { close(g.release) }) }

func (g *slowHandler) Publish(ctx context.Context, _ ...any) error {
	g.mu.Lock()
	g.n++
	first := g.n == 1
	g.mu.Unlock()
	if !first {
		return nil
	}
	close(g.entered)
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		g.cause = context.Cause(ctx)
		g.mu.Unlock()
		close(g.cancelled)
	}
	if g.ignoreCtx {
		<-g.release
		return nil
	}
	return ctx.Err()
}

func (g *slowHandler) calls() (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n, g.cause
}

// failingRenewals is a store whose AcquireLease fails once fail is set:
// a holder that cannot reach its database.
type failingRenewals struct {
	CursorStore
	fail atomic.Bool
}

var errUnreachable = errors.New("database unreachable")

func (s *failingRenewals) AcquireLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	if s.fail.Load() {
		return Lease{}, errUnreachable
	}
	return s.CursorStore.AcquireLease(ctx, holder, now, ttl)
}

// await fails the test unless ch is closed soon. The timeout only turns a
// hang into a failure: what the test waits for is the signal.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting until %s", what)
	}
}

// awaitErr is await for a pass's result.
func awaitErr(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting until %s", what)
		return nil
	}
}

// keeperWaits waits until the lease's keeper waits for its next renewal:
// its renewal timer and its watchdog (the lease's end) are the only two
// timers on the clock of a ticker that was never started.
func keeperWaits(t *testing.T, clock *clockwork.FakeClock) {
	t.Helper()
	require.True(t, keeperWaiting(t, clock), "the keeper waits for its next renewal")
}

// keeperWaiting is keeperWaits reporting a keeper that never waits (the
// timeout only turns a hang into an answer).
func keeperWaiting(t *testing.T, clock *clockwork.FakeClock) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return clock.BlockUntilContext(ctx, 2) == nil
}

// emitDueBehind sets store's minute cursor `behind` minutes back and runs
// EmitDue on a replica "a" publishing to pub, in the background.
func emitDueBehind(t *testing.T, clock *clockwork.FakeClock, store CursorStore, pub Publisher, behind int, ttl time.Duration) (*Ticker, time.Time, <-chan error) {
	t.Helper()
	ctx := context.Background()
	from := epoch.Truncate(time.Minute).Add(-time.Duration(behind) * time.Minute)
	require.NoError(t, store.Advance(ctx, Minute, time.Time{}, from, 0))
	a, err := New(pub, store, WithClock(clock), WithUnits(Minute), WithLease("a", ttl), WithLogger(discard))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.EmitDue(ctx) }()
	return a, from, done
}

// TestLeaseHoldsWhileAPublishOutlastsTheTTL blocks the first publish of a
// pass for three ttls. The keeper renews the lease meanwhile, so a second
// replica cannot take it, and the first replica's cursor write succeeds
// once the publish returns: how long handlers take no longer costs the
// lease (issue 26).
func TestLeaseHoldsWhileAPublishOutlastsTheTTL(t *testing.T) {
	t.Parallel()
	const ttl = 30 * time.Second
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, second := f.open(t)
			clock := clockwork.NewFakeClockAt(epoch)
			pub := newSlowHandler(t)
			a, _, done := emitDueBehind(t, clock, store, pub, 2, ttl)
			await(t, pub.entered, "the first publish starts")

			// 3 × ttl, a third at a time. Should the keeper stop waiting
			// (it gave up the lease), the rest passes at once, so that what
			// a second replica finds says what that cost.
			waiting := true
			for elapsed := time.Duration(0); elapsed < 3*ttl; elapsed += ttl / 3 {
				if waiting = keeperWaiting(t, clock); !waiting {
					t.Errorf("the keeper does not wait for a renewal after %v inside one publish", elapsed)
					clock.Advance(3*ttl - elapsed)
					break
				}
				clock.Advance(ttl / 3)
			}
			if waiting {
				keeperWaits(t, clock) // the last renewal is done
			}
			b, err := New(&recorder{}, second(), WithClock(clock), WithUnits(Minute), WithLease("b", ttl), WithLogger(discard))
			require.NoError(t, err)
			require.ErrorIs(t, b.EmitDue(ctx), ErrNotLeader, "a's lease is live after 3 ttls inside one publish")

			pub.open()
			require.NoError(t, awaitErr(t, done, "the pass ends"))
			n, _ := pub.calls()
			require.Equal(t, 2, n)
			cur, err := store.Cursor(ctx, Minute)
			require.NoError(t, err)
			require.True(t, cur.Equal(epoch.Truncate(time.Minute)), "a's cursor write went through: %v", cur)
			lease, err := store.(leaseReader).Lease(ctx)
			require.NoError(t, err)
			require.Equal(t, "a", lease.Holder)
			require.Equal(t, int64(1), lease.Term, "renewals keep the fencing term")
			require.NoError(t, a.Health())
			_, lost := a.LastLeaseLoss()
			require.False(t, lost)
			require.NoError(t, a.Stop(ctx))
		})
	}
}

// TestAHolderThatCannotRenewStopsDeciding blocks a pass's first publish
// while its lease cannot be renewed — the store fails, or the process
// stalled past the ttl and another replica took the lease. The publish's
// ctx is cancelled with a cause wrapping ErrLeaseLost, the pass publishes
// nothing more, and its cursor stays where it was.
func TestAHolderThatCannotRenewStopsDeciding(t *testing.T) {
	t.Parallel()
	const ttl = 30 * time.Second
	for _, f := range storeFactories() {
		for _, how := range []string{"store fails", "stalled past the ttl"} {
			t.Run(f.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				opened, second := f.open(t)
				store := &failingRenewals{CursorStore: opened}
				clock := clockwork.NewFakeClockAt(epoch)
				pub := newSlowHandler(t)
				a, from, done := emitDueBehind(t, clock, store, pub, 3, ttl)
				await(t, pub.entered, "the first publish starts")
				keeperWaits(t, clock)

				var b *Ticker
				var rec *recorder
				if how == "store fails" {
					store.fail.Store(true)
					clock.Advance(ttl / 3) // the next renewal fails
				} else {
					clock.Advance(2 * ttl) // a is paused: its keeper too
					rec = &recorder{}
					var err error
					b, err = New(rec, second(), WithClock(clock), WithUnits(Minute), WithLease("b", ttl), WithLogger(discard))
					require.NoError(t, err)
					require.NoError(t, b.EmitDue(ctx), "b takes the lapsed lease")
				}

				errA := awaitErr(t, done, "a's pass ends: the ctx of its publish is cancelled")
				require.ErrorIs(t, errA, ErrLeaseLost)
				n, cause := pub.calls()
				require.ErrorIs(t, cause, ErrLeaseLost, "the publish's ctx says why it was cancelled")
				require.Equal(t, 1, n, "a publishes nothing after losing the lease")
				loss, ok := a.LastLeaseLoss()
				require.True(t, ok)
				require.Equal(t, int64(1), loss.Term)
				require.ErrorIs(t, loss.Err, ErrLeaseLost)

				cur, err := opened.Cursor(ctx, Minute)
				require.NoError(t, err)
				if how == "store fails" {
					require.ErrorIs(t, loss.Err, errUnreachable)
					require.Equal(t, int64(1), a.Stats().StoreFailures)
					require.Zero(t, a.Stats().PublishFailures, "the cancelled publish is the lease's loss, not the receiver's failure")
					require.True(t, cur.Equal(from), "nothing was published, the cursor stays: %v", cur)
					return
				}
				events, _ := rec.take()
				require.Len(t, events, 4, "b publishes what a could not, and the minute that passed while a stalled")
				require.True(t, events[0].Boundary().Equal(Next(Minute, from, time.UTC)), "from a's cursor on: %v", events[0])
				require.True(t, cur.Equal(Previous(Minute, clock.Now(), time.UTC)), "b moved the cursor: %v", cur)
				require.NoError(t, b.Stop(ctx))
			})
		}
	}
}

// TestHealthShowsAPassRunningOnAnUnconfirmedLease lets a publish ignore
// its cancelled ctx after the lease could not be renewed: while it runs a
// ttl or more past the last confirmed renewal, Health is unhealthy; once
// the pass is over Health is nil again, and LastLeaseLoss says when the
// lease was lost.
func TestHealthShowsAPassRunningOnAnUnconfirmedLease(t *testing.T) {
	t.Parallel()
	const ttl = 30 * time.Second
	clock := clockwork.NewFakeClockAt(epoch)
	store := &failingRenewals{CursorStore: NewMemoryStore()}
	pub := newSlowHandler(t)
	pub.ignoreCtx = true
	a, _, done := emitDueBehind(t, clock, store, pub, 2, ttl)
	await(t, pub.entered, "the first publish starts")
	keeperWaits(t, clock)
	store.fail.Store(true)
	clock.Advance(ttl / 3)
	lostAt := clock.Now()
	await(t, pub.cancelled, "the keeper cancels the publish's ctx")
	require.NoError(t, a.Health(), "a third of the ttl without renewal is not yet a failure")
	clock.Advance(ttl)
	err := a.Health()
	require.ErrorIs(t, err, ErrUnhealthy)
	require.ErrorIs(t, err, ErrLeaseLost)
	require.ErrorContains(t, err, "a pass still runs on a lease last confirmed 40s ago, at "+timefmt.Format(epoch))

	pub.open()
	require.ErrorIs(t, awaitErr(t, done, "the pass ends"), ErrLeaseLost)
	n, _ := pub.calls()
	require.Equal(t, 1, n, "nothing more is published once the lease is lost")
	require.NoError(t, a.Health(), "the pass is over; the next one takes the lease again or stands by")
	loss, ok := a.LastLeaseLoss()
	require.True(t, ok)
	require.ErrorIs(t, loss.Err, errUnreachable)
	require.True(t, loss.At.Equal(lostAt), "lost at %v, want %v", loss.At, lostAt)
}

// TestALeaseLostBetweenUnitsEndsThePass loses the lease in the minute's
// last publish, whose publisher ignores the cancelled ctx and returns
// nil: the pass ends there, before the hour, and the only store failure
// counted is the renewal's, not a read on the cancelled context.
func TestALeaseLostBetweenUnitsEndsThePass(t *testing.T) {
	t.Parallel()
	const ttl = 30 * time.Second
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			opened, _ := f.open(t)
			store := &failingRenewals{CursorStore: opened}
			clock := clockwork.NewFakeClockAt(epoch)
			pub := newSlowHandler(t)
			pub.ignoreCtx = true
			from := epoch.Truncate(time.Minute).Add(-time.Minute)
			require.NoError(t, store.Advance(ctx, Minute, time.Time{}, from, 0))
			require.NoError(t, store.Advance(ctx, Hour, time.Time{}, epoch.Truncate(time.Hour), 0))
			a, err := New(pub, store, WithClock(clock), WithUnits(Minute, Hour), WithLease("a", ttl), WithLogger(discard))
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- a.EmitDue(ctx) }()
			await(t, pub.entered, "the minute's publish starts")
			keeperWaits(t, clock)
			store.fail.Store(true)
			clock.Advance(ttl / 3)
			await(t, pub.cancelled, "the keeper cancels the publish's ctx")
			pub.open()
			require.ErrorIs(t, awaitErr(t, done, "the pass ends"), ErrLeaseLost)
			require.Equal(t, int64(1), a.Stats().StoreFailures, "the failed renewal, nothing else")
		})
	}
}
