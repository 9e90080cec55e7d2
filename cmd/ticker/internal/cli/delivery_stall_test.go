package cli_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/tick"
)

// stallingReceiver takes every POST at once but the first run of the
// schedule stalled, which it holds until release is closed. It keeps,
// per schedule, the keys of the runs it took in the order it took them,
// and counts every request per key, so a run sent twice shows.
type stallingReceiver struct {
	stalled string        // the schedule whose first run is held
	holding chan struct{} // closed once that run's request came in
	release chan struct{} // closed by the test: the held request is taken

	mu       sync.Mutex
	once     bool
	taken    map[string][]string // schedule -> keys taken, in order
	requests map[string]int      // key -> requests
}

func newStallingReceiver(stalled string) *stallingReceiver {
	return &stallingReceiver{
		stalled: stalled, holding: make(chan struct{}), release: make(chan struct{}),
		taken: map[string][]string{}, requests: map[string]int{},
	}
}

func (s *stallingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(sink.HeaderIdempotency)
	schedule := "minute"
	if r.Header.Get(sink.HeaderEvent) == "ScheduleRun" {
		schedule, _, _ = strings.Cut(key, "@") // the slot id: name@slot
	}
	s.mu.Lock()
	s.requests[key]++
	hold := schedule == s.stalled && !s.once
	s.once = s.once || hold
	s.mu.Unlock()
	if hold {
		close(s.holding)
		select {
		case <-s.release:
		case <-r.Context().Done(): // the relay gave up: not taken
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken[schedule] = append(s.taken[schedule], key)
}

// keys returns the keys the receiver took of schedule.
func (s *stallingReceiver) keys(schedule string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.taken[schedule])
}

// slots are the slot ids of name's runs at the minutes 12:01 to 12:0n.
func slots(name string, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("%s@2026-11-21T12:%02d:00Z", name, i))
	}
	return out
}

// A receiver that stalls on one schedule's run holds back that schedule
// alone: the other schedules' runs of every later minute keep arriving
// while it stalls, the stalled schedule's later runs wait behind it (its
// stream's order), and once the request is answered they follow in order
// — every run taken once, the stalled one not sent again. "ticker run"
// delivers through outbox.Relay.Run, where a loop of passes waited for
// the slowest request of each pass: with it, b's and c's runs of 12:02
// never came while a's of 12:01 stalled.
func TestAStalledReceiverHoldsBackItsOwnScheduleOnly(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			recv := newStallingReceiver("a")
			srv := httptest.NewServer(recv)
			t.Cleanup(srv.Close)
			// Closed before the server: its Close waits for the handler.
			released := sync.OnceFunc(func() { close(recv.release) })
			t.Cleanup(released)

			clock := clockwork.NewFakeClockAt(start)
			for _, name := range []string{"a", "b", "c"} {
				ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", name, "--spec", "@every 1m", "--command", name))
			}
			r := startRun(t, clock, "--db", db, "--units", "minute", "--webhook", srv.URL)
			// Within 5 s: the webhook gives up on a request after 10 s, which
			// would end any stall (a refusal, the run sent again).
			arrived := func(name string, n int) {
				t.Helper()
				require.Eventually(t, func() bool { return len(recv.keys(name)) >= n }, 5*time.Second, time.Millisecond,
					"%d runs of %s taken: %v; %s", n, name, recv.keys(name), r.stderr)
			}

			require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
			select { // a's run of 12:01 is on the wire, and held
			case <-recv.holding:
			case <-time.After(5 * time.Second):
				require.FailNow(t, "a's run of 12:01 never came", r.stderr.String())
			}
			arrived("b", 1)
			arrived("c", 1)
			// Three more minutes while a's request stalls: b's and c's runs
			// and the minutes arrive, each minute's before the next.
			const minutes = 4
			for m := 2; m <= minutes; m++ {
				require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
				arrived("b", m)
				arrived("c", m)
				arrived("minute", m)
			}
			require.Empty(t, recv.keys("a"), "a's stream waits behind its stalled run")
			recv.mu.Lock()
			require.Zero(t, recv.requests["a@2026-11-21T12:02:00Z"], "nothing of a is offered past the stalled run")
			recv.mu.Unlock()

			released()
			arrived("a", minutes)
			require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())

			for _, name := range []string{"a", "b", "c"} {
				require.Equal(t, slots(name, minutes), recv.keys(name), "%s's runs, each once, in order", name)
			}
			recv.mu.Lock()
			defer recv.mu.Unlock()
			for key, n := range recv.requests {
				require.Equal(t, 1, n, "%s sent once", key)
			}
			require.NotContains(t, r.stderr.String(), "delivery refused", "the stalled request was answered, not refused")
		})
	}
}
