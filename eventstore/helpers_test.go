package eventstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// The events of a small bank account, the aggregate the tests use.
type (
	Opened    struct{ Owner string }
	Deposited struct {
		Amount int
		By     int // which writer appended it, in concurrency tests
	}
	Withdrawn struct{ Amount int }
)

var epoch = time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)

func newRegistry(t testing.TB) *eventstore.Registry {
	t.Helper()
	r := eventstore.NewRegistry()
	require.NoError(t, eventstore.Register[Opened](r, "account.opened"))
	require.NoError(t, eventstore.Register[Deposited](r, "account.deposited"))
	require.NoError(t, eventstore.Register[Withdrawn](r, "account.withdrawn"))
	return r
}

// balance is the account aggregate's fold.
func balance(state int, event any) int {
	switch e := event.(type) {
	case Deposited:
		return state + e.Amount
	case Withdrawn:
		return state - e.Amount
	}
	return state
}

type fixture struct {
	ctx      context.Context
	db       *sqldb.DB
	dsn      string
	registry *eventstore.Registry
	clock    *clockwork.FakeClock
	pub      *recordingPublisher
	store    *eventstore.Store
}

// setup opens a fresh database of backend and a store on it with a fake
// clock and a recording publisher, plus opts.
func setup(t *testing.T, backend sqldbtest.Backend, opts ...eventstore.Option) fixture {
	t.Helper()
	db, dsn := backend.Open(t)
	f := fixture{
		ctx:      context.Background(),
		db:       db,
		dsn:      dsn,
		registry: newRegistry(t),
		clock:    clockwork.NewFakeClockAt(epoch),
		pub:      &recordingPublisher{},
	}
	opts = append([]eventstore.Option{eventstore.WithClock(f.clock), eventstore.WithPublisher(f.pub)}, opts...)
	var err error
	f.store, err = eventstore.Open(f.ctx, db.DB, f.registry, opts...)
	require.NoError(t, err)
	return f
}

// secondStore opens another *sql.DB on the fixture's database, as a second
// process would, and a store on it.
func (f fixture) secondStore(t *testing.T) *eventstore.Store {
	t.Helper()
	other, err := sqldb.Open(f.ctx, f.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	s, err := eventstore.Open(f.ctx, other.DB, f.registry, eventstore.WithClock(f.clock))
	require.NoError(t, err)
	return s
}

// forEachBackend runs test in parallel against every backend.
func forEachBackend(t *testing.T, test func(t *testing.T, backend sqldbtest.Backend)) {
	t.Helper()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			test(t, backend)
		})
	}
}

func events(recorded []eventstore.Recorded) []any {
	out := make([]any, len(recorded))
	for i, r := range recorded {
		out[i] = r.Event
	}
	return out
}

// recordingPublisher remembers what it was asked to publish and fails with
// err when set.
type recordingPublisher struct {
	mu     sync.Mutex
	events []any
	err    error
}

func (p *recordingPublisher) Publish(_ context.Context, events ...any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	p.events = append(p.events, events...)
	return nil
}

func (p *recordingPublisher) failWith(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

func (p *recordingPublisher) published() []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]any(nil), p.events...)
}
