package todolist_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

func newTxProcessor(t *testing.T, l *todolist.List, clock clockwork.Clock, action todolist.TxBatchAction, opts ...todolist.ProcessorOption) *todolist.Processor {
	t.Helper()
	p, err := todolist.NewTxBatchProcessor(l, action, append([]todolist.ProcessorOption{todolist.WithClock(clock)}, opts...)...)
	require.NoError(t, err)
	return p
}

// effects is a table the actions of these tests write to, in the batch's
// transaction: what a decision would append to an event store.
func effects(t *testing.T, db *sqldb.DB) (record func(ctx context.Context, tx *sqlx.Tx, id string) error, read func() []string) {
	t.Helper()
	_, err := db.Exec(`CREATE TABLE effects (id TEXT NOT NULL)`)
	require.NoError(t, err)
	record = func(ctx context.Context, tx *sqlx.Tx, id string) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO effects (id) VALUES (?)`), id)
		return err
	}
	read = func() []string {
		var got []string
		require.NoError(t, db.Select(&got, `SELECT id FROM effects ORDER BY id`))
		return got
	}
	return record, read
}

func TestNewTxBatchProcessorRejectsBadInput(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	l := openList(t, db, "orders")
	ok := func(context.Context, *sqlx.Tx, []todolist.Item) ([]error, error) { return nil, nil }
	_, err := todolist.NewTxBatchProcessor(nil, ok)
	require.ErrorIs(t, err, todolist.ErrNilList)
	_, err = todolist.HandleTxBatch[tick.MinuteHasPassed](l, nil)
	require.ErrorIs(t, err, todolist.ErrNilAction)
	_, err = todolist.NewTxBatchProcessor(l, ok, todolist.WithBatchSize(0))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
}

// The outcomes of a transactional batch mean what a batch action's mean:
// the results, totals and observer calls of
// TestABatchActionsOutcomesAreThoseOfAnAction, and what the action wrote
// for its done items commits with their removal.
func TestATxBatchActionsOutcomesAreThoseOfABatchAction(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		record, written := effects(t, db)
		for i, id := range []string{"ok-5", "bad", "busy", "gone", "ok-1", "ok-2", "ok-3", "ok-4"} {
			addItems(t, l, t0.Add(time.Duration(i-8)*time.Second), id)
		}
		clock := clockwork.NewFakeClockAt(t0)
		var batches [][]string
		var observed []string
		observe := func(what string) func(string, todolist.Item, error) {
			return func(_ string, it todolist.Item, err error) {
				observed = append(observed, fmt.Sprintf("%s %s %d %v", what, it.ID, it.Attempts, err))
			}
		}
		p := newTxProcessor(t, l, clock, func(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
			batches = append(batches, ids(items))
			out := make([]error, len(items))
			for i, it := range items {
				switch it.ID {
				case "bad":
					out[i] = fmt.Errorf("cancel %s: %w", it.ID, errFailed)
				case "busy":
					out[i] = errors.Join(errFailed, fmt.Errorf("append: %w", conflictError{}))
				case "gone":
					out[i] = l.RemoveTx(ctx, tx, it.ID)
				default:
					out[i] = record(ctx, tx, it.ID)
				}
			}
			return out, nil
		},
			todolist.WithBatchSize(3),
			todolist.WithMaxAttempts(2),
			todolist.WithBackoff(time.Minute, time.Minute),
			todolist.WithObserver(todolist.Observer{
				Done:   func(_ string, it todolist.Item) { observed = append(observed, "done "+it.ID) },
				Failed: observe("failed"),
				Parked: observe("parked"),
			}))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 8, Done: 6, Failed: 1, Conflicts: 1}, r)
		require.Equal(t, [][]string{{"ok-5", "bad", "busy"}, {"gone", "ok-1", "ok-2"}, {"ok-3", "ok-4"}}, batches,
			"a call per batch, earliest due first, then by ID")
		require.Equal(t, []string{
			"done ok-5", "failed bad 1 cancel bad: payment service unavailable",
			"done gone", "done ok-1", "done ok-2", "done ok-3", "done ok-4",
		}, observed)
		require.Equal(t, []string{"ok-1", "ok-2", "ok-3", "ok-4", "ok-5"}, written())
		stats, err := l.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: 2, Due: 2, OldestDue: t0.Add(-7 * time.Second), Completed: 6, Failures: 1}, stats)
		busy, err := l.Get(ctx, "busy")
		require.NoError(t, err)
		require.Zero(t, busy.Attempts, "a conflict counts no attempt")
		require.Equal(t, t0.Add(time.Nanosecond), busy.NextAttempt, "and is taken by the next tick")
		bad, err := l.Get(ctx, "bad")
		require.NoError(t, err)
		require.Equal(t, 1, bad.Attempts)
		require.Equal(t, t0.Add(time.Minute), bad.NextAttempt, "a failure backs off")

		clock.Advance(time.Minute)
		batches, observed = nil, nil
		r, err = p.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: clock.Now(), Claimed: 2, Parked: 1, Conflicts: 1}, r)
		require.Equal(t, [][]string{{"bad", "busy"}}, batches)
		require.Equal(t, []string{"parked bad 2 cancel bad: payment service unavailable"}, observed)
		parked, err := l.Parked(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"bad"}, ids(parked))
	})
}

// An action that fails as a whole — its error, its panic, the wrong number
// of outcomes — undoes everything it wrote, and every item of the batch
// counts a failed attempt; a conflict as the whole batch's error is every
// item's conflict.
func TestATxBatchActionsOwnFailureUndoesItsWrites(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		record, written := effects(t, db)
		addItems(t, l, t0.Add(-time.Minute), "a", "b")
		clock := clockwork.NewFakeClockAt(t0)
		for _, c := range []struct {
			name    string
			outcome func() ([]error, error)
			want    string
		}{
			{"error", func() ([]error, error) { return nil, errFailed }, errFailed.Error()},
			{"panic", func() ([]error, error) { panic("boom") }, "todolist: action panicked: boom"},
			{"outcomes", func() ([]error, error) { return []error{nil}, nil }, "todolist: batch action returned the wrong number of outcomes: 1 for a batch of 2 items"},
		} {
			p := newTxProcessor(t, l, clock, func(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
				for _, it := range items {
					require.NoError(t, record(ctx, tx, it.ID))
					require.NoError(t, l.AddTx(ctx, tx, it.ID, t0.Add(time.Hour)))
				}
				return c.outcome()
			}, todolist.WithBackoff(time.Second, time.Second), todolist.WithMaxAttempts(10))
			r, err := p.Process(ctx, clock.Now())
			require.NoError(t, err, c.name)
			require.Equal(t, todolist.Result{Cutoff: clock.Now(), Claimed: 2, Failed: 2}, r, c.name)
			require.Empty(t, written(), "%s: the action's writes are undone", c.name)
			for _, id := range []string{"a", "b"} {
				it, err := l.Get(ctx, id)
				require.NoError(t, err)
				require.Equal(t, t0.Add(-time.Minute), it.Due, "%s: the re-add is undone too", c.name)
				require.Equal(t, c.want, it.LastError, c.name)
			}
			clock.Advance(time.Second)
		}

		p := newTxProcessor(t, l, clock, func(context.Context, *sqlx.Tx, []todolist.Item) ([]error, error) {
			return nil, fmt.Errorf("append: %w", conflictError{})
		})
		r, err := p.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: clock.Now(), Claimed: 2, Conflicts: 2}, r)
		a, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, 3, a.Attempts, "a conflict counts no attempt")
	})
}

// An item the action re-adds, or removes and adds again, in the batch's
// transaction is new work: it stays on the list as the action left it.
func TestATxBatchKeepsTheItemsItsActionAddsAgain(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "schedules")
		addItems(t, l, t0.Add(-time.Minute), "later", "same", "earlier", "many", "done", "bypass")
		clock := clockwork.NewFakeClockAt(t0)
		p := newTxProcessor(t, l, clock, func(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
			out := make([]error, len(items))
			for i, it := range items {
				switch it.ID {
				case "later":
					out[i] = l.AddTx(ctx, tx, it.ID, t0.Add(time.Hour))
				case "same", "earlier":
					due := it.Due
					if it.ID == "earlier" {
						due = due.Add(-time.Hour)
					}
					if out[i] = l.RemoveTx(ctx, tx, it.ID); out[i] == nil {
						out[i] = l.AddTx(ctx, tx, it.ID, due)
					}
				case "many":
					out[i] = l.AddManyTx(ctx, tx, []todolist.NewItem{{ID: it.ID, Due: t0.Add(2 * time.Hour)}})
				case "bypass":
					// Through the list but not the action's ctx.
					out[i] = l.AddTx(context.Background(), tx, it.ID, t0.Add(3*time.Hour))
				}
			}
			return out, nil
		})
		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, 6, r.Done)
		want := map[string]time.Time{
			"later":   t0.Add(time.Hour),
			"same":    t0.Add(-time.Minute),
			"earlier": t0.Add(-time.Hour - time.Minute),
			"many":    t0.Add(2 * time.Hour),
			"bypass":  t0.Add(3 * time.Hour),
		}
		for id, due := range want {
			it, err := l.Get(ctx, id)
			require.NoError(t, err, id)
			require.Equal(t, due, it.Due, id)
		}
		_, err = l.Get(ctx, "done")
		require.ErrorIs(t, err, todolist.ErrNotFound)
	})
}

// A tick whose ctx ends while the action runs writes nothing: the items
// stay due, for the next tick, with no attempt counted, and what the
// action wrote is undone.
func TestACancelledTxBatchWritesNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		l := openList(t, db, "orders")
		record, written := effects(t, db)
		addItems(t, l, t0.Add(-time.Minute), "a", "b")
		clock := clockwork.NewFakeClockAt(t0)
		ctx, cancel := context.WithCancel(context.Background())
		p := newTxProcessor(t, l, clock, func(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
			out := make([]error, len(items))
			for i, it := range items {
				out[i] = record(ctx, tx, it.ID)
			}
			cancel()
			out[1] = errFailed
			return out, nil
		})
		_, err := p.Process(ctx, t0)
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, written())
		due, err := l.Due(context.Background(), t0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b"}, ids(due))
		for _, it := range due {
			require.Zero(t, it.Attempts)
		}
	})
}

// Two transactional processors on PostgreSQL work one list at the same
// moment — each holds a batch while the other takes its own — and decide
// every item exactly once.
func TestTwoTxBatchProcessorsShareAListOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, dsn := sqldbtest.Postgres(t)
	l1, l2 := openTwice(t, ctx, db, dsn, "orders")
	const n = 60
	items := make([]todolist.NewItem, n)
	for i := range items {
		items[i] = todolist.NewItem{ID: fmt.Sprintf("order-%02d", i), Due: t0.Add(-time.Duration(i) * time.Second)}
	}
	require.NoError(t, l1.AddMany(ctx, items))
	clock := clockwork.NewFakeClockAt(t0)
	meet := rendezvous(2)
	var mu sync.Mutex
	var decided []string
	per := make([]int, 2)
	results := make([]todolist.Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, l := range []*todolist.List{l1, l2} {
		p := newTxProcessor(t, l, clock, func(ctx context.Context, _ *sqlx.Tx, batch []todolist.Item) ([]error, error) {
			meet[i](ctx) // both hold a batch at once
			mu.Lock()
			decided = append(decided, ids(batch)...)
			per[i] += len(batch)
			mu.Unlock()
			return make([]error, len(batch)), nil
		}, todolist.WithBatchSize(7))
		wg.Go(func() { results[i], errs[i] = p.Process(ctx, t0) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	sort.Strings(decided)
	want := make([]string, n)
	for i := range want {
		want[i] = items[i].ID
	}
	sort.Strings(want)
	require.Equal(t, want, decided, "every item decided once")
	require.Positive(t, per[0])
	require.Positive(t, per[1])
	require.Equal(t, n, results[0].Done+results[1].Done)
	stats, err := l1.Stats(ctx, t0)
	require.NoError(t, err)
	require.Equal(t, todolist.Stats{Completed: n}, stats)
}

// What an action registers with AfterCommit runs once its batch has
// committed — it sees the batch's writes from another connection — and
// not at all when the batch is undone; outside a transactional batch
// action nothing is registered.
func TestAfterCommitRunsOnlyOnceTheBatchCommitted(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		record, written := effects(t, db)
		addItems(t, l, t0.Add(-time.Minute), "a", "b")
		clock := clockwork.NewFakeClockAt(t0)
		var seen [][]string
		failWhole := true
		p := newTxProcessor(t, l, clock, func(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
			for _, it := range items {
				require.NoError(t, record(ctx, tx, it.ID))
			}
			require.True(t, todolist.AfterCommit(ctx, func(context.Context) { seen = append(seen, written()) }))
			if failWhole {
				return nil, errFailed
			}
			return make([]error, len(items)), nil
		}, todolist.WithBackoff(time.Second, time.Second))
		_, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Empty(t, seen, "an undone batch calls nothing")

		failWhole = false
		clock.Advance(time.Second)
		_, err = p.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, [][]string{{"a", "b"}}, seen, "called once, after the commit")

		require.False(t, todolist.AfterCommit(ctx, func(context.Context) {}))
	})
}

// An item held with HoldTx on PostgreSQL is skipped by a transactional
// batch until the holder's transaction ends.
func TestATxBatchSkipsAHeldItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.Postgres(t)
	l := openList(t, db, "schedules")
	addItems(t, l, t0.Add(-time.Minute), "held", "free")
	var decided []string
	p := newTxProcessor(t, l, clockwork.NewFakeClockAt(t0), func(_ context.Context, _ *sqlx.Tx, items []todolist.Item) ([]error, error) {
		decided = append(decided, ids(items)...)
		return make([]error, len(items)), nil
	})
	tx, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, l.HoldTx(ctx, tx, "held"))
	require.NoError(t, l.HoldTx(ctx, tx, "absent"), "holding an item the list lacks is no error")
	_, err = p.Process(ctx, t0)
	require.NoError(t, err)
	require.Equal(t, []string{"free"}, decided)
	require.NoError(t, tx.Rollback())
	_, err = p.Process(ctx, t0)
	require.NoError(t, err)
	require.Equal(t, []string{"free", "held"}, decided)
}

// WithWorkers works a tick's batches at once on PostgreSQL — both workers
// hold a batch at the same moment — and each item once; the tick's
// maximum holds across the workers. The other processors reject it.
func TestTxBatchWorkersShareATick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.Postgres(t)
	l := openList(t, db, "orders")
	const n = 100
	items := make([]todolist.NewItem, n)
	for i := range items {
		items[i] = todolist.NewItem{ID: fmt.Sprintf("order-%03d", i), Due: t0.Add(-time.Duration(i) * time.Second)}
	}
	require.NoError(t, l.AddMany(ctx, items))
	meet := rendezvous(2)
	var mu sync.Mutex
	var decided []string
	batches := 0
	p := newTxProcessor(t, l, clockwork.NewFakeClockAt(t0), func(ctx context.Context, _ *sqlx.Tx, batch []todolist.Item) ([]error, error) {
		mu.Lock()
		i := batches
		batches++
		mu.Unlock()
		if i < 2 {
			meet[i](ctx) // the first two batches are held at once
		}
		mu.Lock()
		decided = append(decided, ids(batch)...)
		mu.Unlock()
		return make([]error, len(batch)), nil
	}, todolist.WithWorkers(2), todolist.WithBatchSize(7), todolist.WithMaxItems(90))
	// Bounded: one worker alone would wait for the other at the meeting.
	tick, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := p.Process(tick, t0)
	require.NoError(t, err)
	require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 90, Done: 90, Backlog: 10}, res)
	sort.Strings(decided)
	require.Len(t, decided, 90)
	for i := 1; i < len(decided); i++ {
		require.NotEqual(t, decided[i-1], decided[i], "an item decided twice")
	}

	_, err = todolist.NewProcessor(l, succeed, todolist.WithWorkers(2))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
	_, err = todolist.NewBatchProcessor(l, perItem(succeed), todolist.WithWorkers(2))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
	_, err = todolist.NewTxBatchProcessor(l, nil, todolist.WithWorkers(0))
	require.Error(t, err)
	_, err = todolist.NewTxBatchProcessor(l, func(context.Context, *sqlx.Tx, []todolist.Item) ([]error, error) { return nil, nil }, todolist.WithWorkers(todolist.MaxWorkers+1))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
}
