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
		{"nil meter provider", pub, store, []Option{WithMeterProvider(nil)}, ErrInvalidOption, "WithMeterProvider: meter provider must not be nil"},
		{"nil tracer provider", pub, store, []Option{WithTracerProvider(nil)}, ErrInvalidOption, "WithTracerProvider: tracer provider must not be nil"},
		{"zero retry", pub, store, []Option{WithRetryBackoff(0, time.Minute)}, ErrInvalidOption, "WithRetryBackoff: initial delay 0s must be positive"},
		{"retry max below initial", pub, store, []Option{WithRetryBackoff(time.Minute, time.Second)}, ErrInvalidOption, "max 1s is shorter"},
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
	twoDaysAgo := epoch.Add(-48 * time.Hour).Truncate(time.Hour)
	require.NoError(t, store.Advance(ctx, Hour, time.Time{}, twoDaysAgo, 0))
	rec := &recorder{}
	tk, err := New(rec, store, WithClock(clock), WithUnits(Hour, Day))
	require.NoError(t, err)

	require.ErrorIs(t, tk.EmitUntil(ctx, epoch.Add(time.Nanosecond)), ErrFuture)
	require.NoError(t, tk.EmitUntil(ctx, epoch.Add(-24*time.Hour)))
	events, _ := rec.take()
	require.Len(t, events, 24)
	for _, e := range events {
		require.True(t, e.(HourHasPassed).CatchUp)
	}
	cursors, err := store.Cursors(ctx)
	require.NoError(t, err)
	require.Equal(t, map[Unit]time.Time{Hour: twoDaysAgo.Add(24 * time.Hour)}, cursors,
		"the day, without a cursor, has no starting point and is left alone")
}

// TestEmitUntilNeverMovesACursorBack asks for a backfill up to an instant
// the cursors have passed, or on a store without cursors: nothing is
// emitted, no cursor moves, and the caller is told.
func TestEmitUntilNeverMovesACursorBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	store := NewMemoryStore()
	rec := &recorder{}
	tk, err := New(rec, store, WithClock(clock), WithUnits(Hour))
	require.NoError(t, err)

	require.ErrorIs(t, tk.EmitUntil(ctx, epoch.Add(-time.Hour)), ErrNothingToBackfill, "no cursor yet")
	cur, err := store.Cursor(ctx, Hour)
	require.NoError(t, err)
	require.True(t, cur.IsZero(), "no cursor recorded: %v", cur)

	require.NoError(t, tk.EmitDue(ctx)) // the first run records the start
	start, err := store.Cursor(ctx, Hour)
	require.NoError(t, err)
	require.ErrorIs(t, tk.EmitUntil(ctx, epoch.Add(-5*time.Hour)), ErrNothingToBackfill, "until before the cursor")
	require.ErrorIs(t, tk.EmitUntil(ctx, epoch), ErrNothingToBackfill, "until on the cursor's boundary")
	cur, err = store.Cursor(ctx, Hour)
	require.NoError(t, err)
	require.True(t, cur.Equal(start), "the cursor stays at %v: %v", start, cur)
	events, skips := rec.take()
	require.Empty(t, events)
	require.Empty(t, skips)
}

// TestFailedPassIsRetriedWithBackoff has the publisher fail at midnight
// with days as the only unit: the day is retried after 1 s, then 2 s, not
// at the next midnight, and the backoff starts over after a success.
func TestFailedPassIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 23, 59, 0, 0, time.UTC))
	var failures []time.Time
	tk, rec := setup(t, clock, NewMemoryStore(), WithUnits(Day), WithRetryBackoff(time.Second, time.Minute),
		WithObserver(Observer{PublishFailed: func(Unit, time.Time, error) { failures = append(failures, clock.Now()) }}))
	fail := func(n int) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.fail = func(any) error {
			if n == 0 {
				return nil
			}
			n--
			return errors.New("receiver down for a moment")
		}
	}
	emittedAt := func() []time.Time {
		events, _ := rec.take()
		var out []time.Time
		for _, e := range events {
			out = append(out, e.(DayHasPassed).EmittedAt.UTC())
		}
		return out
	}
	midnight := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

	fail(2)
	advance(t, clock, time.Minute, tk) // fails at midnight
	advance(t, clock, time.Second, tk) // fails again
	require.Empty(t, emittedAt())
	advance(t, clock, 2*time.Second, tk) // succeeds
	require.Equal(t, []time.Time{midnight.Add(3 * time.Second)}, emittedAt())
	require.Equal(t, []time.Time{midnight, midnight.Add(time.Second)}, failures)

	fail(1)
	advance(t, clock, 24*time.Hour-3*time.Second, tk)
	advance(t, clock, time.Second, tk) // back to the initial backoff
	require.Equal(t, []time.Time{midnight.Add(24*time.Hour + time.Second)}, emittedAt())
	require.Equal(t, int64(3), tk.Stats().PublishFailures)
}

func TestRetryBackoffDoublesUpToItsMaximum(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	require.NoError(t, WithRetryBackoff(time.Second, 10*time.Second)(&cfg))
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, cfg.backoff(n))
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}, got)
}

// brokenStore fails every cursor read.
type brokenStore struct{ *MemoryStore }

func (brokenStore) Cursor(context.Context, Unit) (time.Time, error) {
	return time.Time{}, errors.New("disk on fire")
}

func TestStoreFailuresAreCountedAndReported(t *testing.T) {
	t.Parallel()
	var reported []error
	tk, err := New(&recorder{}, brokenStore{NewMemoryStore()}, WithClock(clockwork.NewFakeClockAt(epoch)),
		WithUnits(Minute, Hour), WithObserver(Observer{StoreFailed: func(err error) { reported = append(reported, err) }}))
	require.NoError(t, err)
	require.ErrorContains(t, tk.EmitDue(context.Background()), "disk on fire")
	require.Equal(t, int64(2), tk.Stats().StoreFailures, "one per unit: a failing unit does not hide the other")
	require.Len(t, reported, 2)
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

// gate is a Publisher that records events and blocks inside the Publish of
// the blockAt-th one (counting from 1) until released.
type gate struct {
	blockAt int
	entered chan struct{}
	release chan struct{}

	mu       sync.Mutex
	events   []Event
	returned bool // the blocked Publish has returned
}

func newGate(blockAt int) *gate {
	return &gate{blockAt: blockAt, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) Publish(_ context.Context, events ...any) error {
	g.mu.Lock()
	g.events = append(g.events, events[0].(Event))
	n := len(g.events)
	g.mu.Unlock()
	if n != g.blockAt {
		return nil
	}
	close(g.entered)
	<-g.release
	g.mu.Lock()
	g.returned = true
	g.mu.Unlock()
	return nil
}

// TestStopEndsACatchUpBetweenEvents stops a ticker while a long catch-up
// is blocked inside a publish: Stop waits for that publish only, saves the
// cursor on it and publishes nothing after it.
func TestStopEndsACatchUpBetweenEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	store := NewMemoryStore()
	sixHoursAgo := epoch.Truncate(time.Minute).Add(-6 * time.Hour)
	require.NoError(t, store.Advance(ctx, Minute, time.Time{}, sixHoursAgo, 0))
	g := newGate(3)
	tk, err := New(g, store, WithClock(clock), WithUnits(Minute), WithLogger(discard))
	require.NoError(t, err)
	require.NoError(t, tk.Start(ctx)) // the first pass catches up 360 minutes
	<-g.entered

	tk.mu.Lock()
	stopRequested := tk.stopping
	tk.mu.Unlock()
	type result struct {
		err            error
		publishEndedBy bool // whether the blocked publish had returned when Stop did
	}
	stopped := make(chan result)
	go func() {
		err := tk.Stop(ctx)
		g.mu.Lock()
		defer g.mu.Unlock()
		stopped <- result{err, g.returned}
	}()
	<-stopRequested
	select {
	case <-stopped:
		t.Fatal("Stop returned while a publish was blocked")
	default:
	}
	close(g.release)
	res := <-stopped
	require.NoError(t, res.err)
	require.True(t, res.publishEndedBy, "Stop returned only after the publish in flight did")

	g.mu.Lock()
	defer g.mu.Unlock()
	third := sixHoursAgo.Add(3 * time.Minute)
	require.Equal(t, []time.Time{sixHoursAgo.Add(time.Minute), sixHoursAgo.Add(2 * time.Minute), third}, boundaries(g.events),
		"nothing after the publish in flight")
	cur, err := store.Cursor(ctx, Minute)
	require.NoError(t, err)
	require.True(t, cur.Equal(third), "the cursor is saved on the last published boundary: %v", cur)
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

// A pass that failed after running longer than its backoff is retried a
// backoff after it ended, not at once: its retry time, which the log
// prints, is never already past.
func TestAFailedLongPassIsRetriedABackoffAfterItEnded(t *testing.T) {
	t.Parallel()
	tk, err := New(&recorder{}, NewMemoryStore(), WithClock(clockwork.NewFakeClockAt(epoch)), WithRetryBackoff(time.Second, time.Minute))
	require.NoError(t, err)
	ended := epoch.Add(40 * time.Second) // a publish that took 40 s, then failed
	retry := tk.schedule(epoch, ended, outcome{}, errors.New("receiver gone"))
	require.Equal(t, ended.Add(time.Second), retry)
	retry = tk.schedule(ended, ended, outcome{}, errors.New("receiver gone"))
	require.Equal(t, ended.Add(2*time.Second), retry, "the second failure in a row waits twice as long")
}
