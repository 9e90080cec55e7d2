package todolist_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// acted records when each item's action ran, by the clock.
type acted struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *acted) action(clock clockwork.Clock) todolist.Action {
	return func(_ context.Context, it todolist.Item) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.at == nil {
			a.at = map[string]time.Time{}
		}
		a.at[it.ID] = clock.Now()
		return nil
	}
}

func (a *acted) snapshot() map[string]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]time.Time, len(a.at))
	for k, v := range a.at {
		out[k] = v
	}
	return out
}

func (a *acted) get(id string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.at[id]
	return at, ok
}

// startRunner runs r until the test ends and returns each wait it
// chooses, once its timer is armed.
func startRunner(t *testing.T, r *todolist.Runner) <-chan time.Duration {
	t.Helper()
	waits, unwatched := make(chan time.Duration), make(chan struct{})
	todolist.OnRunnerSleep(r, func(w time.Duration) {
		select {
		case waits <- w:
		case <-unwatched: // the test is over: sleep on, to be stopped
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		close(unwatched)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
	return waits
}

// Items due at scattered instants are acted on when they fall due, not at
// the next minute: the runner wakes at the earliest due item.
func TestARunnerActsWhenItemsFallDue(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "deadlines", todolist.WithListClock(clock))
		rng := rand.New(rand.NewPCG(1, 2))
		due := map[string]time.Time{}
		for i := range 20 {
			id := fmt.Sprint("o-", i)
			due[id] = t0.Add(time.Duration(rng.Int64N(int64(10 * time.Second))))
			require.NoError(t, l.Add(context.Background(), id, due[id]))
		}
		a := &acted{}
		r, err := todolist.NewRunner(newProcessor(t, l, clock, a.action(clock)), todolist.WithMaxWait(time.Minute))
		require.NoError(t, err)
		waits := startRunner(t, r)
		// Advance the fake clock by exactly each wait the runner chose,
		// until every item was acted on.
		for range 1000 {
			w := <-waits
			if len(a.snapshot()) == len(due) {
				break
			}
			clock.Advance(w)
		}
		for id, d := range due {
			at, ok := a.get(id)
			require.True(t, ok, "%s was not acted on", id)
			require.False(t, at.Before(d), "%s acted on before it was due", id)
			// The runner wakes at the earliest due item, or 50 ms after its
			// last pass when that one is already due.
			require.LessOrEqual(t, at.Sub(d), 50*time.Millisecond, "%s was due at %s, acted on at %s", id, d, at)
		}
	})
}

// An item added in this process earlier than the one the runner waits for
// is seen at once after Poke, not after MaxWait.
func TestPokeMakesTheRunnerLookAgain(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	l := openList(t, db, "deadlines", todolist.WithListClock(clock))
	require.NoError(t, l.Add(context.Background(), "later", t0.Add(time.Hour)))
	a := &acted{}
	r, err := todolist.NewRunner(newProcessor(t, l, clock, a.action(clock)), todolist.WithMaxWait(time.Hour))
	require.NoError(t, err)
	waits := startRunner(t, r)
	require.Equal(t, time.Hour, <-waits, "nothing due before an hour")
	require.NoError(t, l.Add(context.Background(), "soon", t0.Add(2*time.Second)))
	r.Poke()
	w := <-waits
	require.Equal(t, 2*time.Second, w, "poked, it looks again and waits for the new item")
	clock.Advance(w)
	<-waits
	at, ok := a.get("soon")
	require.True(t, ok, "acted on two seconds later, not an hour")
	require.Equal(t, t0.Add(2*time.Second), at)
	_, err = todolist.NewRunner(nil)
	require.ErrorIs(t, err, todolist.ErrInvalidArgument)
	_, err = todolist.NewRunner(newProcessor(t, l, clock, a.action(clock)), todolist.WithMaxWait(0))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
}

// BenchmarkRunnerLateness acts on 5,000 items due at random instants over
// five seconds of the real clock and reports how late the actions ran
// after their due time: p50, p99 and the maximum.
//
//	PASSAGE_TEST_POSTGRES=… go test ./todolist -run '^$' -bench BenchmarkRunnerLateness -benchtime 1x
func BenchmarkRunnerLateness(b *testing.B) {
	const n = 5000
	for _, be := range sqldbtest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				db, _ := be.Open(b)
				l, err := todolist.Open(context.Background(), db.DB, "deadlines")
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now().Add(500 * time.Millisecond)
				items := make([]todolist.NewItem, n)
				for i := range items {
					items[i] = todolist.NewItem{ID: fmt.Sprint("o-", i), Due: start.Add(time.Duration(rand.Int64N(int64(5 * time.Second))))}
				}
				if err := l.AddMany(context.Background(), items); err != nil {
					b.Fatal(err)
				}
				dueOf := map[string]time.Time{}
				for _, it := range items {
					dueOf[it.ID] = it.Due
				}
				var (
					mu   sync.Mutex
					late []time.Duration
					done = make(chan struct{})
				)
				p, err := todolist.NewProcessor(l, func(_ context.Context, it todolist.Item) error {
					mu.Lock()
					defer mu.Unlock()
					late = append(late, time.Since(dueOf[it.ID]))
					if len(late) == n {
						close(done)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				r, err := todolist.NewRunner(p)
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				stopped := make(chan struct{})
				b.StartTimer()
				go func() { _ = r.Run(ctx); close(stopped) }()
				<-done
				b.StopTimer()
				cancel()
				<-stopped
				slices.Sort(late)
				b.ReportMetric(late[n/2].Seconds()*1000, "p50-late-ms")
				b.ReportMetric(late[n*99/100].Seconds()*1000, "p99-late-ms")
				b.ReportMetric(late[n-1].Seconds()*1000, "max-late-ms")
			}
		})
	}
}
