package eventstore_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// Every round, all writers append to one stream expecting the same version,
// through two database handles (two "processes"): exactly one wins, every
// other gets a conflict naming the winner's version.
func TestConcurrentAppendersOneWinnerPerVersion(t *testing.T) {
	t.Parallel()
	const writers, rounds = 8, 10
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		stores := []*eventstore.Store{f.store, f.secondStore(t)}
		const stream = "account-contended"

		winners := make([]Deposited, rounds)
		for round := range rounds {
			var (
				wg        sync.WaitGroup
				start     = make(chan struct{})
				results   = make([]eventstore.AppendResult, writers)
				errs      = make([]error, writers)
				candidate = func(w int) Deposited { return Deposited{Amount: round, By: w} }
			)
			for w := range writers {
				wg.Go(func() {
					<-start
					results[w], errs[w] = stores[w%2].Append(f.ctx, stream, eventstore.Exact(int64(round)), candidate(w))
				})
			}
			close(start)
			wg.Wait()

			won := -1
			for w, err := range errs {
				if err == nil {
					require.Equal(t, -1, won, "round %d: writers %d and %d both won", round, won, w)
					won = w
					require.Equal(t, int64(round+1), results[w].Version)
					continue
				}
				var conflict *eventstore.VersionConflictError
				require.ErrorAs(t, err, &conflict, "round %d writer %d", round, w)
				require.Equal(t, int64(round+1), conflict.Actual, "the loser learns the winner's version")
			}
			require.NotEqual(t, -1, won, "round %d: nobody won", round)
			winners[round] = candidate(won)
		}

		loaded, err := f.store.Load(f.ctx, stream, 0)
		require.NoError(t, err)
		require.Len(t, loaded, rounds)
		for i, r := range loaded {
			require.Equal(t, int64(i+1), r.Version, "no gaps")
		}
		require.Equal(t, winners, typed[Deposited](t, events(loaded)), "exactly the winners' events, once each")
	})
}

// Writers on two handles each make many deposits through Update, retrying
// on conflict: every deposit lands exactly once, versions have no gaps and
// each writer's deposits keep their order.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	const writers, deposits = 6, 15
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		stores := []*eventstore.Store{f.store, f.secondStore(t)}
		const stream = "account-busy"

		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				for d := range deposits {
					_, err := eventstore.Update(f.ctx, stores[w%2], stream, 0, balance,
						func(int) ([]any, error) { return []any{Deposited{Amount: d, By: w}}, nil },
						eventstore.WithRetries(writers*deposits))
					if err != nil {
						errs[w] = fmt.Errorf("writer %d deposit %d: %w", w, d, err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}

		loaded, err := f.store.Load(f.ctx, stream, 0)
		require.NoError(t, err)
		require.Len(t, loaded, writers*deposits)
		next := make([]int, writers)
		for i, r := range loaded {
			require.Equal(t, int64(i+1), r.Version, "no gaps")
			if i > 0 {
				require.Greater(t, r.Position, loaded[i-1].Position, "positions follow versions within a stream")
			}
			d := r.Event.(Deposited)
			require.Equal(t, next[d.By], d.Amount, "writer %d: each deposit once, in order", d.By)
			next[d.By]++
		}
	})
}

func typed[E any](t *testing.T, events []any) []E {
	t.Helper()
	out := make([]E, len(events))
	for i, e := range events {
		v, ok := e.(E)
		require.True(t, ok, "event %d is %T", i, e)
		out[i] = v
	}
	return out
}

// Writers on two handles append to one stream as fast as they can expecting
// Any or StreamExists, conditions a concurrent append cannot break: every
// append lands, after the ones before it, with no gaps and no duplicates.
func TestConcurrentUnconditionalAppendsAllLand(t *testing.T) {
	t.Parallel()
	const writers, appends = 8, 20
	for _, expected := range []eventstore.ExpectedVersion{eventstore.Any, eventstore.StreamExists} {
		t.Run(expected.String(), func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
				f := setup(t, backend)
				stores := []*eventstore.Store{f.store, f.secondStore(t)}
				const stream = "account-shared"
				_, err := f.store.Append(f.ctx, stream, eventstore.NoStream, Opened{Owner: "Ada"})
				require.NoError(t, err)

				var wg sync.WaitGroup
				start := make(chan struct{})
				errs := make([]error, writers)
				for w := range writers {
					wg.Go(func() {
						<-start
						for a := range appends {
							if _, err := stores[w%2].Append(f.ctx, stream, expected, Deposited{Amount: a, By: w}); err != nil {
								errs[w] = fmt.Errorf("writer %d append %d: %w", w, a, err)
								return
							}
						}
					})
				}
				close(start)
				wg.Wait()
				for _, err := range errs {
					require.NoError(t, err)
				}

				loaded, err := f.store.Load(f.ctx, stream, 0)
				require.NoError(t, err)
				require.Len(t, loaded, 1+writers*appends)
				next := make([]int, writers)
				for i, r := range loaded {
					require.Equal(t, int64(i+1), r.Version, "no gaps, no duplicates")
					if i == 0 {
						continue
					}
					d := r.Event.(Deposited)
					require.Equal(t, next[d.By], d.Amount, "writer %d: each append once, in order", d.By)
					next[d.By]++
				}
			})
		})
	}
}
