package todolist_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is when every test's fake clock starts.
var t0 = time.Date(2026, 3, 29, 10, 0, 0, 0, time.UTC)

// eachBackend runs test against a fresh database of every backend: SQLite
// always, PostgreSQL when PASSAGE_TEST_POSTGRES is set.
func eachBackend(t *testing.T, test func(t *testing.T, db *sqldb.DB, dsn string)) {
	t.Helper()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.Open(t)
			test(t, db, dsn)
		})
	}
}

func openList(t *testing.T, db *sqldb.DB, name string, opts ...todolist.ListOption) *todolist.List {
	t.Helper()
	l, err := todolist.Open(context.Background(), db.DB, name, opts...)
	require.NoError(t, err)
	return l
}

// addItems adds ids to l, all due at due.
func addItems(t *testing.T, l *todolist.List, due time.Time, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, l.Add(context.Background(), id, due))
	}
}

func newProcessor(t *testing.T, l *todolist.List, clock clockwork.Clock, action todolist.Action, opts ...todolist.ProcessorOption) *todolist.Processor {
	t.Helper()
	p, err := todolist.NewProcessor(l, action, append([]todolist.ProcessorOption{todolist.WithClock(clock)}, opts...)...)
	require.NoError(t, err)
	return p
}

func ids(items []todolist.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func succeed(context.Context, todolist.Item) error { return nil }

func fail(context.Context, todolist.Item) error { return errFailed }

var errFailed = errors.New("payment service unavailable")

// openTwice opens the list name on db and on a second handle on the same
// database, as another process would.
func openTwice(t *testing.T, ctx context.Context, db *sqldb.DB, dsn, name string) (*todolist.List, *todolist.List) {
	t.Helper()
	db2, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db2.Close() })
	return openList(t, db, name), openList(t, db2, name)
}

// rendezvous returns one function per party; the first call of each waits
// until every party has called its own (or ctx ends), so that processors
// provably work at the same moment.
func rendezvous(parties int) []func(ctx context.Context) {
	arrived := make([]chan struct{}, parties)
	for i := range arrived {
		arrived[i] = make(chan struct{})
	}
	meet := make([]func(context.Context), parties)
	for i := range meet {
		var once sync.Once
		meet[i] = func(ctx context.Context) {
			once.Do(func() {
				close(arrived[i])
				for _, a := range arrived {
					select {
					case <-a:
					case <-ctx.Done():
						return
					}
				}
			})
		}
	}
	return meet
}

// processTogether runs, at once, a processor per list with the action
// action(i) for the i-th list, in small batches, for the boundary t0; it
// returns their results.
func processTogether(t *testing.T, ctx context.Context, action func(i int) todolist.Action, lists ...*todolist.List) []todolist.Result {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0)
	results := make([]todolist.Result, len(lists))
	errs := make([]error, len(lists))
	var wg sync.WaitGroup
	for i, l := range lists {
		p := newProcessor(t, l, clock, action(i), todolist.WithBatchSize(7))
		wg.Go(func() { results[i], errs[i] = p.Process(ctx, t0) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return results
}
