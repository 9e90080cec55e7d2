package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/outbox"
)

var t0 = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// receiver is a sink that keeps what it took, in order, and refuses what
// its refuse function says.
type receiver struct {
	mu       sync.Mutex
	got      []outbox.Message
	refuse   func(m outbox.Message) error
	attempts int // deliveries offered, taken or not
}

func (r *receiver) deliver(_ context.Context, m outbox.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	if r.refuse != nil {
		if err := r.refuse(m); err != nil {
			return err
		}
	}
	r.got = append(r.got, m)
	return nil
}

func (r *receiver) offered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts
}

func (r *receiver) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, len(r.got))
	for i, m := range r.got {
		keys[i] = m.Key
	}
	return keys
}

// keysOf returns the keys r took of stream, in the order it took them.
func (r *receiver) keysOf(stream string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for _, m := range r.got {
		if m.Stream == stream {
			keys = append(keys, m.Key)
		}
	}
	return keys
}

func open(t *testing.T, b sqldbtest.Backend, clock clockwork.Clock) (*sqldb.DB, *outbox.Outbox) {
	t.Helper()
	db, _ := b.Open(t)
	o, err := outbox.Open(context.Background(), db.DB, outbox.WithClock(clock))
	require.NoError(t, err)
	return db, o
}

func write(t *testing.T, db *sqldb.DB, o *outbox.Outbox, records ...outbox.Record) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, o.WriteTx(ctx, tx, records...))
	require.NoError(t, tx.Commit())
}

// passUntil passes until the sink took want records: on PostgreSQL a
// pass reads nothing past a transaction still running anywhere on the
// server (other tests' included), so one pass may come too early.
func passUntil(t *testing.T, relay *outbox.Relay, r *receiver, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(r.keys()) < want {
		_, err := relay.Pass(context.Background())
		require.NoError(t, err)
		if time.Now().After(deadline) {
			t.Fatalf("the sink took %v, not %d records", r.keys(), want)
		}
	}
}

func rec(stream, key string) outbox.Record {
	return outbox.Record{Stream: stream, Key: key, Type: "Test", Body: []byte(`{"key":"` + key + `"}`)}
}

// A record written in a transaction that rolls back is never delivered;
// one that commits is delivered once, however often it is written.
func TestOnlyWhatCommittedIsDelivered(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, o := open(t, b, clockwork.NewFakeClockAt(t0))
			tx, err := db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, o.WriteTx(ctx, tx, rec("s", "rolled-back")))
			require.NoError(t, tx.Rollback())
			write(t, db, o, rec("s", "a"), rec("s", "b"))
			write(t, db, o, rec("s", "a")) // the same decision, recorded again
			r := &receiver{}
			relay, err := outbox.NewRelay(o, "hook", r.deliver)
			require.NoError(t, err)
			passUntil(t, relay, r, 2)
			require.Equal(t, []string{"a", "b"}, r.keys())
			require.Equal(t, `{"key":"a"}`, string(r.got[0].Body))
			require.Equal(t, t0, r.got[0].RecordedAt)
			require.Equal(t, 1, r.got[0].Attempt)

			res, err := relay.Pass(ctx)
			require.NoError(t, err)
			require.Zero(t, res.Delivered, "the checkpoint holds")
			again, err := outbox.NewRelay(o, "hook", r.deliver)
			require.NoError(t, err)
			_, err = again.Pass(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"a", "b"}, r.keys(), "a new relay of the sink resumes at its checkpoint")

			other := &receiver{}
			second, err := outbox.NewRelay(o, "log", other.deliver)
			require.NoError(t, err)
			passUntil(t, second, other, 2)
			require.Equal(t, []string{"a", "b"}, other.keys(), "each sink has its own checkpoint")
		})
	}
}

// PostgreSQL assigns a record's position when it is inserted, not when
// it commits: a record that commits after a later-positioned one was
// read is still delivered, before it in order.
func TestARecordCommittedLateIsNotSkipped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.Postgres(t)
	o, err := outbox.Open(ctx, db.DB)
	require.NoError(t, err)
	slow, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = slow.Rollback() }()
	require.NoError(t, o.WriteTx(ctx, slow, rec("s", "first-written"))) // takes the lower position
	write(t, db, o, rec("s", "committed-first"))

	r := &receiver{}
	relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithFrom(outbox.FromBeginning))
	require.NoError(t, err)
	_, err = relay.Pass(ctx)
	require.NoError(t, err)
	require.Empty(t, r.keys(), "nothing after a transaction still running is read")

	require.NoError(t, slow.Commit())
	passUntil(t, relay, r, 2)
	require.Equal(t, []string{"first-written", "committed-first"}, r.keys())
}

// Writers committing and rolling back at random while a relay passes
// over and over: what the sink took is exactly what committed, each
// stream in the order its writer committed it.
func TestConcurrentWritersLoseNothingAndDeliverNothingUncommitted(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, o := open(t, b, clockwork.NewRealClock())
			r := &receiver{}
			relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithPage(7))
			require.NoError(t, err)
			const writers, each = 4, 40
			committed := make([][]string, writers)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					stream := fmt.Sprint("stream-", w)
					for i := range each {
						key := fmt.Sprintf("%s/%d", stream, i)
						tx, err := db.BeginTxx(ctx, nil)
						if !assertNoError(t, err) {
							return
						}
						if !assertNoError(t, o.WriteTx(ctx, tx, rec(stream, key))) {
							_ = tx.Rollback()
							return
						}
						time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // hold the transaction open a while
						if rng.IntN(4) == 0 {
							_ = tx.Rollback()
							continue
						}
						if !assertNoError(t, tx.Commit()) {
							return
						}
						committed[w] = append(committed[w], key)
					}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			for passing := true; passing; {
				select {
				case <-done:
					passing = false
				default:
				}
				_, err := relay.Pass(ctx)
				require.NoError(t, err)
			}
			// What committed last: a pass that read nothing is no sign the
			// sink has everything, since on PostgreSQL it reads nothing past
			// a transaction still running anywhere on the server.
			passUntil(t, relay, r, len(slices.Concat(committed...)))
			for w := range writers {
				stream := fmt.Sprint("stream-", w)
				require.Equal(t, committed[w], r.keysOf(stream), stream)
			}
			require.Len(t, r.keys(), len(slices.Concat(committed...)), "nothing twice")
		})
	}
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// A refused record holds back the rest of its stream until it is taken;
// other streams go on. It is retried after its backoff, the observer told
// of a retry in the future.
func TestARefusalHoldsItsStreamOnly(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := clockwork.NewFakeClockAt(t0)
			db, o := open(t, b, clock)
			write(t, db, o, rec("a", "a1"), rec("b", "b1"), rec("a", "a2"), rec("b", "b2"))
			refusals := 0
			r := &receiver{refuse: func(m outbox.Message) error {
				if m.Key == "a1" && refusals < 2 {
					refusals++
					return errors.New("503 Service Unavailable")
				}
				return nil
			}}
			var retries []time.Time
			relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithBackoff(time.Second, time.Minute),
				outbox.WithObserver(outbox.Observer{Refused: func(m outbox.Message, err error, next time.Time) {
					require.Equal(t, "a1", m.Key)
					require.ErrorContains(t, err, "503")
					retries = append(retries, next)
				}}))
			require.NoError(t, err)
			passUntil(t, relay, r, 2)
			require.Equal(t, []string{"b1", "b2"}, r.keys())
			require.Equal(t, 1, refusals)

			_, err = relay.Pass(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"b1", "b2"}, r.keys(), "not before its backoff ends")

			clock.Advance(time.Second)
			res, err := relay.Pass(ctx)
			require.NoError(t, err)
			require.Equal(t, t0.Add(3*time.Second), res.NextRetry, "the second refusal waits twice as long")
			clock.Advance(2 * time.Second)
			_, err = relay.Pass(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"a1", "a2"}, r.keysOf("a"), "in order")
			require.Equal(t, 3, r.got[2].Attempt, "its third attempt")
			require.Equal(t, []time.Time{t0.Add(time.Second), t0.Add(3 * time.Second)}, retries)
			st := relay.Stats()
			require.Equal(t, int64(4), st.Delivered)
			require.Equal(t, int64(2), st.Refused)
		})
	}
}

// A record refused WithMaxAttempts times is parked: listed with its last
// error, its stream going on without it, its attempts counted across
// relays (a restart does not start them over).
func TestARecordRefusedForGoodIsParkedAndListed(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := clockwork.NewFakeClockAt(t0)
			db, o := open(t, b, clock)
			write(t, db, o, rec("a", "a1"), rec("a", "a2"))
			r := &receiver{refuse: func(m outbox.Message) error {
				if m.Key == "a1" {
					return fmt.Errorf("422: attempt %d refused", m.Attempt)
				}
				return nil
			}}
			relayFor := func() *outbox.Relay {
				relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithMaxAttempts(3), outbox.WithBackoff(time.Second, time.Second))
				require.NoError(t, err)
				return relay
			}
			for range 3 { // a new relay each time, as after restarts
				relay := relayFor()
				deadline := time.Now().Add(30 * time.Second)
				for offered := r.offered(); r.offered() == offered; { // until this relay got to it
					_, err := relay.Pass(ctx)
					require.NoError(t, err)
					require.False(t, time.Now().After(deadline), "a1 is not offered again")
				}
				clock.Advance(time.Second)
			}
			require.Equal(t, []string{"a2"}, r.keys())
			parked, err := o.Parked(ctx, "hook")
			require.NoError(t, err)
			require.Len(t, parked, 1)
			require.Equal(t, "a1", parked[0].Key)
			require.Equal(t, "hook", parked[0].Sink)
			require.Equal(t, 3, parked[0].Attempt)
			require.Equal(t, "422: attempt 3 refused", parked[0].LastError)
			none, err := o.Parked(ctx, "log")
			require.NoError(t, err)
			require.Empty(t, none)
		})
	}
}

// One stream's slow request does not hold the others: they are delivered
// while it waits.
func TestStreamsAreDeliveredInParallel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, o := open(t, sqldbtest.Backend{Name: "sqlite", Open: sqldbtest.SQLite}, clockwork.NewFakeClockAt(t0))
	write(t, db, o, rec("slow", "s1"), rec("fast", "f1"), rec("fast", "f2"))
	fastDone := make(chan struct{})
	var fast sync.WaitGroup
	fast.Add(2)
	go func() { fast.Wait(); close(fastDone) }()
	relay, err := outbox.NewRelay(o, "hook", func(ctx context.Context, m outbox.Message) error {
		if m.Stream == "fast" {
			fast.Done()
			return nil
		}
		select { // the slow request ends only once the others were taken
		case <-fastDone:
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("the other stream waited for this one")
		}
	}, outbox.WithParallel(2))
	require.NoError(t, err)
	res, err := relay.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, res.Delivered)
}

// Bad input is refused, naming what was wrong.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, o := open(t, sqldbtest.Backend{Name: "sqlite", Open: sqldbtest.SQLite}, clockwork.NewFakeClockAt(t0))
	err := o.WriteTx(ctx, db, outbox.Record{Stream: "s"})
	require.ErrorIs(t, err, outbox.ErrInvalidArgument)
	require.ErrorContains(t, err, "key")
	err = o.WriteTx(ctx, db, outbox.Record{Key: "k"})
	require.ErrorContains(t, err, "stream")
	require.ErrorIs(t, o.WriteTx(ctx, nil, rec("s", "k")), outbox.ErrInvalidArgument)
	_, err = outbox.NewRelay(o, "", func(context.Context, outbox.Message) error { return nil })
	require.ErrorIs(t, err, outbox.ErrInvalidArgument)
	_, err = outbox.NewRelay(o, "hook", func(context.Context, outbox.Message) error { return nil }, outbox.WithParallel(0))
	require.ErrorIs(t, err, outbox.ErrInvalidOption)
	_, err = outbox.NewRelay(o, "hook", func(context.Context, outbox.Message) error { return nil }, outbox.WithBackoff(time.Minute, time.Second))
	require.ErrorIs(t, err, outbox.ErrInvalidOption)
}

// Backlog counts what a sink has yet to take: everything before a pass,
// the refused record and what waits behind it after one, nothing once
// all is taken; parked records are not pending.
func TestBacklogCountsWhatTheSinkHasYetToTake(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := clockwork.NewFakeClockAt(t0)
			db, o := open(t, b, clock)
			write(t, db, o, rec("a", "a1"), rec("a", "a2"), rec("b", "b1"))
			clock.Advance(time.Second)
			write(t, db, o, rec("c", "c1"))
			refuse := true
			r := &receiver{refuse: func(m outbox.Message) error {
				if m.Key == "a1" && refuse {
					return errors.New("503 Service Unavailable")
				}
				return nil
			}}
			relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithBackoff(time.Second, time.Minute), outbox.WithMaxAttempts(2),
				outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			other, err := outbox.NewRelay(o, "other", r.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)

			got, err := relay.Backlog(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Backlog{Pending: 4, Oldest: t0}, got)
			passUntil(t, relay, r, 2) // b1, c1
			got, err = relay.Backlog(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Backlog{Pending: 2, Waiting: 1, Oldest: t0}, got, "a1 refused, a2 behind it")
			got, err = other.Backlog(ctx)
			require.NoError(t, err)
			require.Equal(t, 4, got.Pending, "per sink")

			clock.Advance(time.Second)
			_, err = relay.Pass(ctx) // the second refusal parks a1; a2 goes
			require.NoError(t, err)
			got, err = relay.Backlog(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Backlog{}, got, "a parked record is not pending")
		})
	}
}

// A relay stopped in the middle of a stream keeps what the sink took
// before: the next pass starts at the record that was in flight.
func TestAStoppedRelayKeepsWhatWasDelivered(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, o := open(t, b, clockwork.NewFakeClockAt(t0))
			write(t, db, o, rec("a", "a1"), rec("a", "a2"), rec("a", "a3"))
			r := &receiver{}
			ctx, stop := context.WithCancel(context.Background())
			stopped := false
			relay, err := outbox.NewRelay(o, "hook", func(ctx context.Context, m outbox.Message) error {
				if m.Key == "a2" && !stopped {
					stopped = true
					stop() // the process is told to stop while a2 is on the wire
					return ctx.Err()
				}
				return r.deliver(ctx, m)
			})
			require.NoError(t, err)
			for ctx.Err() == nil {
				_, _ = relay.Pass(ctx)
			}
			require.Equal(t, []string{"a1"}, r.keys())
			passUntil(t, relay, r, 3)
			require.Equal(t, []string{"a1", "a2", "a3"}, r.keys(), "a1 not offered again")
		})
	}
}

// A record taken after refusals, by a relay told to stop right after the
// sink took it, is not offered again: its refusals are cleared and its
// stream's checkpoint moved all the same.
func TestARetryTakenAsTheRelayStopsIsNotOfferedAgain(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(t0)
			db, o := open(t, b, clock)
			write(t, db, o, rec("a", "a1"))
			r := &receiver{}
			ctx, stop := context.WithCancel(context.Background())
			refused := false
			relay, err := outbox.NewRelay(o, "hook", func(ctx context.Context, m outbox.Message) error {
				if !refused {
					refused = true
					return errors.New("503")
				}
				err := r.deliver(ctx, m)
				stop() // taken, and the process stops before the pass ends
				return err
			})
			require.NoError(t, err)
			for !refused {
				_, err := relay.Pass(ctx)
				require.NoError(t, err)
			}
			clock.Advance(time.Minute)
			for ctx.Err() == nil {
				_, _ = relay.Pass(ctx)
			}
			require.Equal(t, []string{"a1"}, r.keys())
			res, err := relay.Pass(context.Background())
			require.NoError(t, err)
			require.Zero(t, res.Delivered+res.Refused, "a1 not offered again")
			waitFor(t, "every checkpoint written", func() bool { return pendingOf(t, relay) == 0 })
		})
	}
}

// running starts relay.Run and returns what stops it and waits for it
// (the kill: ctx cancelled, Run returned).
func running(t *testing.T, relay *outbox.Relay) (kill func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- relay.Run(ctx, func(err error) { t.Errorf("relay: %v", err) })
	}()
	stopped := false
	kill = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
	t.Cleanup(kill)
	return kill
}

// waitFor waits until cond holds (it is checked whenever what the relay
// does may have changed it, at the latest every millisecond), failing
// after 30 s: on PostgreSQL a committed record is read only once every
// transaction older than it, anywhere on the server, has ended.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// stallSink is a sink whose delivery of the keys in stall blocks until
// the test releases it (or the relay's context ends), counting the
// deliveries in flight.
type stallSink struct {
	receiver
	stall    map[string]chan struct{} // closed to release the key
	stalled  chan string              // told each key as it stalls
	inFlight atomic.Int32
	maxIn    atomic.Int32
	// takeThenCut: a stalled delivery is taken by the receiver before it
	// blocks, and cut short by the relay's context: the answer is lost.
	takeThenCut bool
}

func newStallSink(keys ...string) *stallSink {
	s := &stallSink{stall: map[string]chan struct{}{}, stalled: make(chan string, len(keys))}
	for _, k := range keys {
		s.stall[k] = make(chan struct{})
	}
	return s
}

func (s *stallSink) deliver(ctx context.Context, m outbox.Message) error {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for old := s.maxIn.Load(); n > old && !s.maxIn.CompareAndSwap(old, n); old = s.maxIn.Load() {
	}
	release, stalls := s.stall[m.Key]
	if !stalls {
		return s.receiver.deliver(ctx, m)
	}
	if s.takeThenCut {
		if err := s.receiver.deliver(ctx, m); err != nil {
			return err
		}
	}
	s.stalled <- m.Key
	select {
	case <-release:
		if s.takeThenCut {
			return nil
		}
		return s.receiver.deliver(ctx, m)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// next waits for the next request to stall and returns its key.
func (s *stallSink) next(t *testing.T) string {
	t.Helper()
	select {
	case key := <-s.stalled:
		return key
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30 s for a request to stall; the sink took %v", s.keys())
		return ""
	}
}

// hasAll reports whether the sink took every key given.
func (r *receiver) hasAll(keys ...string) bool {
	got := r.keys()
	for _, k := range keys {
		if !slices.Contains(got, k) {
			return false
		}
	}
	return true
}

// A request that stalls holds its own stream only: while a2 is on the
// wire, Run delivers the other streams' records committed before and
// during the stall, each once and in order, with never more requests in
// flight than WithParallel; once released, a continues in order.
func TestAStalledRequestHoldsItsStreamOnly(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, o := open(t, b, clockwork.NewFakeClockAt(t0))
			write(t, db, o, rec("a", "a1"), rec("b", "b1"), rec("c", "c1"), rec("a", "a2"), rec("b", "b2"), rec("a", "a3"), rec("c", "c2"))
			s := newStallSink("a2")
			const parallel = 2
			relay, err := outbox.NewRelay(o, "hook", s.deliver, outbox.WithParallel(parallel), outbox.WithPoll(10*time.Millisecond),
				outbox.WithPage(2)) // a's lane holds a2 and a3, a4 waits in the database
			require.NoError(t, err)
			running(t, relay)
			require.Equal(t, "a2", s.next(t))
			waitFor(t, "b and c's records committed before the stall", func() bool { return s.hasAll("b1", "b2", "c1", "c2") })
			// Committed during the stall, a new stream among them, and more
			// of a than its lane holds (a page): a4 is read again after a3.
			write(t, db, o, rec("b", "b3"), rec("a", "a4"), rec("d", "d1"), rec("c", "c3"))
			write(t, db, o, rec("d", "d2"), rec("b", "b4"))
			relay.Notify()
			waitFor(t, "the records committed during the stall", func() bool { return s.hasAll("b3", "b4", "c3", "d1", "d2") })
			require.Equal(t, []string{"a1"}, s.keysOf("a"), "a waits for a2")

			close(s.stall["a2"])
			waitFor(t, "a after the release", func() bool { return s.hasAll("a2", "a3", "a4") })
			require.Equal(t, []string{"a1", "a2", "a3", "a4"}, s.keysOf("a"))
			require.Equal(t, []string{"b1", "b2", "b3", "b4"}, s.keysOf("b"))
			require.Equal(t, []string{"c1", "c2", "c3"}, s.keysOf("c"))
			require.Equal(t, []string{"d1", "d2"}, s.keysOf("d"))
			require.Len(t, s.keys(), 13, "each once")
			require.LessOrEqual(t, s.maxIn.Load(), int32(parallel), "requests in flight")
			waitFor(t, "every checkpoint written", func() bool { return pendingOf(t, relay) == 0 })
		})
	}
}

// A relay killed while a2 stalls, and a new one started: a's records
// are delivered from a2 on, in order; nothing the first relay delivered
// is delivered again but a2, the request in flight at the kill, which
// the receiver took before its answer was lost (the contract: at least
// once for the record of each stream in flight at a stop or a crash,
// exactly once for every other).
func TestARelayKilledMidStallResumesWithoutSkippingOrDoubling(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, o := open(t, b, clockwork.NewFakeClockAt(t0))
			write(t, db, o, rec("a", "a1"), rec("b", "b1"), rec("a", "a2"), rec("b", "b2"), rec("a", "a3"))
			s := newStallSink("a2")
			s.takeThenCut = true
			first, err := outbox.NewRelay(o, "hook", s.deliver, outbox.WithParallel(2), outbox.WithPoll(10*time.Millisecond))
			require.NoError(t, err)
			kill := running(t, first)
			require.Equal(t, "a2", s.next(t))
			write(t, db, o, rec("b", "b3"), rec("a", "a4"), rec("c", "c1"))
			first.Notify()
			waitFor(t, "b and c while a2 stalls", func() bool { return s.hasAll("b1", "b2", "b3", "c1") })
			kill()
			require.Equal(t, []string{"a1", "a2"}, s.keysOf("a"), "a2 taken, its answer lost")

			write(t, db, o, rec("c", "c2"))
			second, err := outbox.NewRelay(o, "hook", s.receiver.deliver, outbox.WithPoll(10*time.Millisecond))
			require.NoError(t, err)
			running(t, second)
			waitFor(t, "a's records after the restart", func() bool { return s.hasAll("a3", "a4", "c2") })
			require.Equal(t, []string{"a1", "a2", "a2", "a3", "a4"}, s.keysOf("a"), "a2, in flight at the kill, again; nothing skipped")
			require.Equal(t, []string{"b1", "b2", "b3"}, s.keysOf("b"), "nothing else again")
			require.Equal(t, []string{"c1", "c2"}, s.keysOf("c"))
			waitFor(t, "every checkpoint written", func() bool { return pendingOf(t, second) == 0 })
		})
	}
}

// Run retries a refusal on the outbox's clock, without holding the
// other streams or a request while it waits.
func TestRunRetriesARefusalOnTheClockAlone(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(t0)
			db, o := open(t, b, clock)
			write(t, db, o, rec("a", "a1"), rec("b", "b1"), rec("a", "a2"), rec("b", "b2"))
			var refusals atomic.Int32
			r := &receiver{refuse: func(m outbox.Message) error {
				if m.Key == "a1" && refusals.Add(1) == 1 {
					return errors.New("503 Service Unavailable")
				}
				return nil
			}}
			relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithParallel(1), outbox.WithPoll(10*time.Millisecond),
				outbox.WithBackoff(time.Second, time.Minute))
			require.NoError(t, err)
			running(t, relay)
			waitFor(t, "b while a1 waits out its backoff", func() bool { return r.hasAll("b1", "b2") })
			require.Empty(t, r.keysOf("a"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, clock.BlockUntilContext(ctx, 1), "a1's retry waits on the clock")
			clock.Advance(time.Second)
			waitFor(t, "a after its retry", func() bool { return r.hasAll("a1", "a2") })
			require.Equal(t, []string{"a1", "a2"}, r.keysOf("a"))
			require.Equal(t, 2, r.got[slices.Index(r.keys(), "a1")].Attempt)
			st := relay.Stats()
			require.Equal(t, int64(4), st.Delivered)
			require.Equal(t, int64(1), st.Refused)
		})
	}
}

// Writers committing and rolling back at random while relays with a
// tiny page run, refuse at random and are killed and restarted: the sink
// takes exactly what committed, each stream in commit order, each record
// once (the sink answers every request, so no answer is lost at a kill).
func TestRunDeliversEachCommittedRecordOnceThroughKillsAndRefusals(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, o := open(t, b, clockwork.NewRealClock())
			var rmu sync.Mutex
			rng := rand.New(rand.NewPCG(7, 7))
			r := &receiver{refuse: func(m outbox.Message) error {
				rmu.Lock()
				defer rmu.Unlock()
				if rng.IntN(8) == 0 {
					return errors.New("500")
				}
				return nil
			}}
			newRelay := func() *outbox.Relay {
				relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithPage(3), outbox.WithParallel(3),
					outbox.WithPoll(5*time.Millisecond), outbox.WithBackoff(time.Millisecond, 4*time.Millisecond),
					outbox.WithFrom(outbox.FromBeginning)) // the writers start first
				require.NoError(t, err)
				return relay
			}
			const writers, each = 6, 30
			committed := make([][]string, writers)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 2))
					stream := fmt.Sprint("stream-", w)
					for i := range each {
						key := fmt.Sprintf("%s/%d", stream, i)
						tx, err := db.BeginTxx(ctx, nil)
						if !assertNoError(t, err) {
							return
						}
						if !assertNoError(t, o.WriteTx(ctx, tx, rec(stream, key))) {
							_ = tx.Rollback()
							return
						}
						if rng.IntN(4) == 0 {
							_ = tx.Rollback()
							continue
						}
						if !assertNoError(t, tx.Commit()) {
							return
						}
						committed[w] = append(committed[w], key)
					}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			for kills := 0; ; kills++ {
				kill := running(t, newRelay())
				select {
				case <-done:
				case <-time.After(20 * time.Millisecond):
				}
				kill()
				if isDone(done) && kills > 2 {
					break
				}
			}
			running(t, newRelay())
			all := slices.Concat(committed...)
			waitFor(t, "every committed record", func() bool { return r.hasAll(all...) })
			for w := range writers {
				stream := fmt.Sprint("stream-", w)
				require.Equal(t, committed[w], r.keysOf(stream), stream)
			}
			require.Len(t, r.keys(), len(all), "nothing twice")
		})
	}
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// pendingOf is what the relay's sink has yet to take, from the database
// (the checkpoints are written after the sink took a record).
func pendingOf(t *testing.T, relay *outbox.Relay) int {
	t.Helper()
	b, err := relay.Backlog(context.Background())
	require.NoError(t, err)
	return b.Pending
}

// Run keeps PostgreSQL's horizon rule: a record that commits after a
// later-positioned one of its stream (and one of another stream) was
// committed is waited for, not skipped, and comes first.
func TestRunWaitsForARecordCommittedLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.Postgres(t)
	o, err := outbox.Open(ctx, db.DB)
	require.NoError(t, err)
	slow, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = slow.Rollback() }()
	require.NoError(t, o.WriteTx(ctx, slow, rec("s", "first-written"))) // takes the lower position
	write(t, db, o, rec("s", "committed-first"), rec("t", "t1"))

	r := &receiver{}
	relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithPoll(5*time.Millisecond), outbox.WithFrom(outbox.FromBeginning))
	require.NoError(t, err)
	running(t, relay)
	waitFor(t, "two reads while the slow transaction is open", func() bool { return relay.Stats().Passes >= 3 })
	require.NoError(t, slow.Commit())
	waitFor(t, "every record", func() bool { return r.hasAll("first-written", "committed-first", "t1") })
	require.Equal(t, []string{"first-written", "committed-first"}, r.keysOf("s"))
	require.Len(t, r.keys(), 3)
}

// WithParallel bounds the requests in flight: with two allowed and three
// streams' requests stalling, the third is offered only once one of the
// first two is released.
func TestRunKeepsAtMostWithParallelRequestsInFlight(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, o := open(t, b, clockwork.NewFakeClockAt(t0))
			write(t, db, o, rec("x", "x1"), rec("y", "y1"), rec("z", "z1"))
			s := newStallSink("x1", "y1", "z1")
			relay, err := outbox.NewRelay(o, "hook", s.deliver, outbox.WithParallel(2), outbox.WithPoll(time.Millisecond))
			require.NoError(t, err)
			running(t, relay)
			first := []string{s.next(t), s.next(t)}
			// The dispatcher has read everything a few times over since: a
			// free request would have taken the third stream by now.
			reads := relay.Stats().Passes
			waitFor(t, "more reads", func() bool { return relay.Stats().Passes >= reads+3 })
			require.Zero(t, len(s.stalled), "a third request in flight")
			close(s.stall[first[0]])
			third := s.next(t)
			require.NotContains(t, first, third)
			close(s.stall[first[1]])
			close(s.stall[third])
			waitFor(t, "every record", func() bool { return s.hasAll("x1", "y1", "z1") })
			require.Equal(t, int32(2), s.maxIn.Load())
		})
	}
}
