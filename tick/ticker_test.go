package tick

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// recorder is a Publisher that keeps what it was given and can be told to
// fail.
type recorder struct {
	mu     sync.Mutex
	events []Event
	skips  []TicksSkipped
	fail   func(event any) error
}

func (r *recorder) Publish(_ context.Context, events ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range events {
		if r.fail != nil {
			if err := r.fail(e); err != nil {
				return err
			}
		}
		switch e := e.(type) {
		case Event:
			r.events = append(r.events, e)
		case TicksSkipped:
			r.skips = append(r.skips, e)
		default:
			return fmt.Errorf("unexpected %T", e)
		}
	}
	return nil
}

func (r *recorder) take() ([]Event, []TicksSkipped) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev, sk := r.events, r.skips
	r.events, r.skips = nil, nil
	return ev, sk
}

var epoch = time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)

// setup starts a ticker on a fake clock at epoch and stops it with the test.
func setup(t *testing.T, clock *clockwork.FakeClock, store CursorStore, opts ...Option) (*Ticker, *recorder) {
	t.Helper()
	rec := &recorder{}
	tk, err := New(rec, store, append([]Option{WithClock(clock), WithLogger(discard)}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, tk.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, tk.Stop(context.Background())) })
	return tk, rec
}

func advance(t *testing.T, clock *clockwork.FakeClock, d time.Duration, tickers ...*Ticker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, AdvanceAndWait(ctx, clock, d, tickers...))
}

func boundaries(events []Event) []time.Time {
	var out []time.Time
	for _, e := range events {
		out = append(out, e.Boundary().UTC())
	}
	return out
}

func hoursFrom(first time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = first.Add(time.Duration(i) * time.Hour).UTC()
	}
	return out
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	pub, store := &recorder{}, NewMemoryStore()
	cases := []struct {
		name string
		pub  Publisher
		st   CursorStore
		opts []Option
		want error
		msg  string
	}{
		{"nil publisher", nil, store, nil, ErrInvalidOption, "publisher"},
		{"nil store", pub, nil, nil, ErrInvalidOption, "store"},
		{"nil clock", pub, store, []Option{WithClock(nil)}, ErrInvalidOption, "clock"},
		{"nil location", pub, store, []Option{WithLocation(nil)}, ErrInvalidOption, "location"},
		{"unknown unit", pub, store, []Option{WithUnits(Minute, "fortnight")}, ErrUnknownUnit, "fortnight"},
		{"no units", pub, store, []Option{WithUnits()}, ErrInvalidOption, "at least one unit"},
		{"zero window", pub, store, []Option{WithCatchUp(Day, All{Max: 3})}, ErrInvalidOption, "Window"},
		{"zero max", pub, store, []Option{WithCatchUp(Day, All{Window: time.Hour})}, ErrInvalidOption, "Max"},
		{"nil policy", pub, store, []Option{WithCatchUp(Day, nil)}, ErrInvalidOption, "policy"},
		{"policy for an unknown unit", pub, store, []Option{WithCatchUp("fortnight", Skip{})}, ErrUnknownUnit, "fortnight"},
		{"policy for an unpublished unit", pub, store, []Option{WithUnits(Minute), WithCatchUp(Day, Skip{})}, ErrInvalidOption, "does not publish"},
		{"empty holder", pub, store, []Option{WithLease("", time.Minute)}, ErrInvalidOption, "holder"},
		{"zero ttl", pub, store, []Option{WithLease("a", 0)}, ErrInvalidOption, "ttl"},
		{"nil logger", pub, store, []Option{WithLogger(nil)}, ErrInvalidOption, "logger"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.pub, tc.st, tc.opts...)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestTickerEmitsEveryBoundaryOnceInOrder(t *testing.T) {
	t.Parallel()
	warsaw := mustLoad(t, "Europe/Warsaw")
	// Two days across the spring DST change, in steps that do and do not
	// cross boundaries, then a whole week in one step.
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 28, 0, 0, 30, 0, warsaw))
	tk, rec := setup(t, clock, NewMemoryStore(), WithLocation(warsaw), WithUnits(Minute, Hour, Day, Week, Month))
	for range 2 * 24 * 2 {
		advance(t, clock, 29*time.Minute+59*time.Second, tk)
		advance(t, clock, time.Second, tk)
	}
	advance(t, clock, 7*24*time.Hour, tk)

	events, skips := rec.take()
	require.Empty(t, skips)
	last := map[Unit]time.Time{}
	count := map[Unit]int{}
	for _, e := range events {
		u := e.Unit()
		if prev, ok := last[u]; ok {
			require.True(t, e.Previous().Equal(prev), "%s previous is the last emitted", e.ID())
			require.True(t, Next(u, prev, warsaw).Equal(e.Boundary()), "%s follows %v without a gap", e.ID(), prev)
		}
		require.Equal(t, warsaw, e.Boundary().Location())
		last[u] = e.Boundary()
		count[u]++
	}
	// The wall clock skips an hour but no instant is lost: 9 × 24 hours
	// pass, one of the days is 23 hours long.
	require.Equal(t, map[Unit]int{Minute: 9 * 24 * 60, Hour: 9 * 24, Day: 9, Week: 2, Month: 1}, count)
	require.Equal(t, int64(len(events)), tk.Stats().Emitted)
}

func TestTickerMarksOnlyLateBoundariesAsCatchUp(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(epoch)
	tk, rec := setup(t, clock, NewMemoryStore(), WithUnits(Hour))
	advance(t, clock, time.Hour, tk)
	advance(t, clock, 3*time.Hour, tk) // asleep for three hours
	events, _ := rec.take()
	require.Equal(t, hoursFrom(epoch.Add(30*time.Minute).Truncate(time.Hour).Add(time.Hour), 4), boundaries(events))
	var catchUp []bool
	for _, e := range events {
		catchUp = append(catchUp, e.(HourHasPassed).CatchUp)
	}
	require.Equal(t, []bool{false, true, true, false}, catchUp)
}

// TestDowntimeCatchUp stops a ticker for three days and restarts it on the
// same database under each policy.
func TestDowntimeCatchUp(t *testing.T) {
	t.Parallel()
	h := func(day, hour int) time.Time { return time.Date(2026, 1, day, hour, 0, 0, 0, time.UTC) }
	cases := []struct {
		name       string
		policy     CatchUp
		emitted    []time.Time
		skipped    int64
		skipFrom   time.Time
		skipTo     time.Time
		firstSince time.Time
	}{
		{"all", All{Window: 7 * 24 * time.Hour, Max: 1000}, hoursFrom(h(1, 2), 72), 0, time.Time{}, time.Time{}, h(1, 1)},
		{"all bounded by window", All{Window: 24 * time.Hour, Max: 1000}, hoursFrom(h(3, 2), 24), 48, h(1, 2), h(3, 1), h(1, 1)},
		{"all bounded by max", All{Window: 7 * 24 * time.Hour, Max: 10}, hoursFrom(h(3, 16), 10), 62, h(1, 2), h(3, 15), h(1, 1)},
		{"latest only", LatestOnly{}, []time.Time{h(4, 1)}, 71, h(1, 2), h(4, 0), h(1, 1)},
		{"skip", Skip{}, nil, 72, h(1, 2), h(4, 1), time.Time{}},
	}
	for _, backend := range sqldbtest.Backends() {
		for _, tc := range cases {
			t.Run(backend.Name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				store, _ := openSQLStore(t, backend)
				clock := clockwork.NewFakeClockAt(epoch)
				ctx := context.Background()

				first, rec := setup(t, clock, store, WithUnits(Hour))
				advance(t, clock, time.Hour, first)
				events, _ := rec.take()
				require.Equal(t, []time.Time{h(1, 1)}, boundaries(events))
				require.NoError(t, first.Stop(ctx))

				clock.Advance(72 * time.Hour) // down for three days
				second, rec := setup(t, clock, store, WithUnits(Hour), WithCatchUp(Hour, tc.policy))
				advance(t, clock, 0, second) // the restart's own pass

				events, skips := rec.take()
				require.Equal(t, tc.emitted, boundaries(events))
				for i, e := range events {
					require.True(t, e.(HourHasPassed).CatchUp, "%s is a catch-up", e.ID())
					if i == 0 {
						require.True(t, e.Previous().Equal(tc.firstSince), "first previous %v", e.Previous())
					}
				}
				if tc.skipped == 0 {
					require.Empty(t, skips)
				} else {
					require.Len(t, skips, 1)
					s := skips[0]
					require.Equal(t, Hour, s.Unit)
					require.Equal(t, tc.skipped, s.Count)
					require.True(t, s.From.Equal(tc.skipFrom), "skipped from %v", s.From)
					require.True(t, s.To.Equal(tc.skipTo), "skipped to %v", s.To)
					require.Equal(t, tc.policy.name(), s.Policy)
				}
				require.Equal(t, Stats{Emitted: int64(len(tc.emitted)), Skipped: tc.skipped, Passes: second.Stats().Passes}, second.Stats())
				cur, err := store.Cursor(ctx, Hour)
				require.NoError(t, err)
				require.True(t, cur.Equal(h(4, 1)), "cursor %v", cur)

				// Running again, the next hour is live.
				advance(t, clock, time.Hour, second)
				events, skips = rec.take()
				require.Empty(t, skips)
				require.Equal(t, []time.Time{h(4, 2)}, boundaries(events))
				require.False(t, events[0].(HourHasPassed).CatchUp)
				require.True(t, events[0].Previous().Equal(h(4, 1)))
			})
		}
	}
}

func TestPublishFailureIsRetriedAtTheNextWakeUp(t *testing.T) {
	t.Parallel()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, _ := openSQLStore(t, backend)
			clock := clockwork.NewFakeClockAt(epoch)
			var failures []time.Time
			tk, rec := setup(t, clock, store, WithUnits(Minute), WithObserver(Observer{
				PublishFailed: func(_ Unit, b time.Time, _ error) { failures = append(failures, b.UTC()) },
			}))
			m := func(i int) time.Time { return time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC) }

			// The publisher fails on 00:03, after 00:01 and 00:02 went out.
			down := errors.New("bus down")
			rec.mu.Lock()
			rec.fail = func(e any) error {
				if e.(Event).Boundary().Equal(m(3)) {
					return down
				}
				return nil
			}
			rec.mu.Unlock()
			advance(t, clock, 3*time.Minute, tk)
			events, _ := rec.take()
			require.Equal(t, []time.Time{m(1), m(2)}, boundaries(events))
			cur, err := store.Cursor(ctx, Minute)
			require.NoError(t, err)
			require.True(t, cur.Equal(m(2)), "the cursor stays before the failed boundary: %v", cur)
			require.Equal(t, []time.Time{m(3)}, failures)
			require.Equal(t, int64(1), tk.Stats().PublishFailures)

			// EmitDue reports the failure to its caller.
			require.ErrorIs(t, tk.EmitDue(ctx), down)

			rec.mu.Lock()
			rec.fail = nil
			rec.mu.Unlock()
			advance(t, clock, time.Minute, tk)
			events, _ = rec.take()
			require.Equal(t, []time.Time{m(3), m(4)}, boundaries(events), "retried once, nothing twice")
			require.True(t, events[0].(MinuteHasPassed).CatchUp)
			require.True(t, events[0].Previous().Equal(m(2)))
		})
	}
}

func TestPanickingPublisherIsAnError(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(epoch)
	tk, err := New(panicker{}, NewMemoryStore(), WithClock(clock), WithUnits(Minute))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, tk.EmitDue(ctx)) // the first pass records the start
	clock.Advance(time.Minute)
	require.ErrorContains(t, tk.EmitDue(ctx), "publisher panicked: boom")
	require.Equal(t, int64(1), tk.Stats().PublishFailures)
}

type panicker struct{}

func (panicker) Publish(context.Context, ...any) error { panic("boom") }

func TestClockGoingBackwardsEmitsNothingTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	rec := &recorder{}
	tk, err := New(rec, NewMemoryStore(), WithClock(clock), WithUnits(Minute))
	require.NoError(t, err)
	require.NoError(t, tk.EmitDue(ctx))
	clock.Advance(5 * time.Minute)
	require.NoError(t, tk.EmitDue(ctx))
	clock.Advance(-3 * time.Minute) // NTP steps the clock back
	require.NoError(t, tk.EmitDue(ctx))
	clock.Advance(4 * time.Minute)
	require.NoError(t, tk.EmitDue(ctx))
	events, _ := rec.take()
	require.Len(t, events, 6)
	for i, e := range events {
		require.True(t, e.Boundary().Equal(epoch.Truncate(time.Minute).Add(time.Duration(i+1)*time.Minute)), e.ID())
	}
}

func TestEmitUntilBackfills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	store := NewMemoryStore()
	require.NoError(t, store.Advance(ctx, Hour, time.Time{}, epoch.Add(-48*time.Hour).Truncate(time.Hour), 0))
	rec := &recorder{}
	tk, err := New(rec, store, WithClock(clock), WithUnits(Hour))
	require.NoError(t, err)

	require.ErrorIs(t, tk.EmitUntil(ctx, epoch.Add(time.Nanosecond)), ErrFuture)
	require.NoError(t, tk.EmitUntil(ctx, epoch.Add(-24*time.Hour)))
	events, _ := rec.take()
	require.Len(t, events, 24)
	for _, e := range events {
		require.True(t, e.(HourHasPassed).CatchUp)
	}
}

func TestStartAndStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	tk, err := New(&recorder{}, NewMemoryStore(), WithClock(clock))
	require.NoError(t, err)
	require.NoError(t, tk.Stop(ctx), "stop before start")
	require.NoError(t, tk.Start(ctx))
	require.ErrorIs(t, tk.Start(ctx), ErrAlreadyStarted)
	require.NoError(t, tk.Stop(ctx))
	require.NoError(t, tk.Stop(ctx), "stop twice")
	require.ErrorIs(t, AdvanceAndWait(ctx, clock, time.Minute, tk), ErrNotRunning)
	require.NoError(t, tk.Start(ctx), "restart")
	require.NoError(t, tk.Stop(ctx))
}

// blocker publishes nothing until released, then reports whether it was
// cancelled.
type blocker struct {
	entered  chan struct{}
	release  chan struct{}
	mu       sync.Mutex
	returned bool
	done     chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
}

func (b *blocker) Publish(ctx context.Context, _ ...any) error {
	close(b.entered)
	defer func() {
		b.mu.Lock()
		b.returned = true
		b.mu.Unlock()
		close(b.done)
	}()
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestStopWaitsForTheEmissionInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	b := newBlocker()
	tk, err := New(b, NewMemoryStore(), WithClock(clock), WithUnits(Minute))
	require.NoError(t, err)
	require.NoError(t, tk.Start(ctx))
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = tk.waitArmed(waitCtx)
	require.NoError(t, err)
	clock.Advance(time.Minute)
	<-b.entered

	stopped := make(chan error)
	go func() { stopped <- tk.Stop(ctx) }()
	close(b.release)
	require.NoError(t, <-stopped)
	b.mu.Lock()
	defer b.mu.Unlock()
	require.True(t, b.returned, "Stop returned only after the publish did")
}

func TestStopHonoursItsContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	b := newBlocker()
	tk, err := New(b, NewMemoryStore(), WithClock(clock), WithUnits(Minute), WithLogger(discard))
	require.NoError(t, err)
	require.NoError(t, tk.Start(ctx))
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = tk.waitArmed(waitCtx)
	require.NoError(t, err)
	clock.Advance(time.Minute)
	<-b.entered

	expired, cancelStop := context.WithCancel(ctx)
	cancelStop()
	require.ErrorIs(t, tk.Stop(expired), context.Canceled)
	// The emission's context was cancelled: the publisher gives up and the
	// scheduler's goroutines end (goleak checks).
	select {
	case <-b.done:
	case <-waitCtx.Done():
		t.Fatal("the publisher's context was not cancelled")
	}
}
