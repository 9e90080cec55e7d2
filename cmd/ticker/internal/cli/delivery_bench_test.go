package cli_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// receiverLatency is how long the benchmark's webhook receiver takes to
// answer: the receiver of issue 26's soak.
const receiverLatency = 44 * time.Millisecond

// slowReceiver answers every POST after receiverLatency and notes when it
// first took each ScheduleRun, by Idempotency-Key.
type slowReceiver struct {
	mu    sync.Mutex
	taken map[string]time.Time
	runs  chan struct{} // one send per first-taken run
}

func (r *slowReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	time.Sleep(receiverLatency) // the receiver's own work
	if req.Header.Get(sink.HeaderEvent) != "ScheduleRun" {
		return
	}
	key := req.Header.Get(sink.HeaderIdempotency)
	r.mu.Lock()
	_, seen := r.taken[key]
	if !seen {
		r.taken[key] = time.Now()
	}
	r.mu.Unlock()
	if !seen {
		r.runs <- struct{}{}
	}
}

// BenchmarkDeliveryLateness is issue 26's lateness target: n stored
// schedules firing every minute (PASSAGE_BENCH_SCHEDULES, default 500)
// through "ticker run" to a webhook receiver that answers in 44 ms. Each
// pass moves the fake clock onto a minute boundary and times, in real
// time, from that moment to the receiver's first acceptance of each run:
// firing, the outbox, the relay and the requests. Its floor, measured in
// the same pass, is the same n requests sent straight to the same
// receiver, 16 at a time (the relay's parallelism) — what delivery costs
// with nothing of passage's. It reports the p50, p99 and max lateness,
// the floor's p99, and vs-floor (the floor's p99 over passage's: 1 is as
// fast as the bare requests).
//
//	go test ./cmd/ticker/internal/cli -run '^$' -bench BenchmarkDeliveryLateness -benchtime 3x
func BenchmarkDeliveryLateness(b *testing.B) {
	n := 500
	if v := os.Getenv("PASSAGE_BENCH_SCHEDULES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("PASSAGE_BENCH_SCHEDULES=%q: want a positive number", v)
		}
	}
	for _, backend := range sqldbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) { deliveryLateness(b, n, backend) })
	}
}

func deliveryLateness(b *testing.B, n int, backend sqldbtest.Backend) {
	ctx := context.Background()
	db, dbPath := backend.Open(b)
	clock := clockwork.NewFakeClockAt(time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second))
	s, err := schedule.Open(ctx, db.DB, func(context.Context, *sqlx.Tx, schedule.Run) error { return nil }, schedule.WithClock(clock))
	if err != nil {
		b.Fatal(err)
	}
	every, err := schedule.Cron("* * * * *", time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	defs := make([]schedule.Definition, n)
	for i := range defs {
		defs[i] = schedule.Definition{Name: fmt.Sprintf("s%04d", i), Spec: every, Command: "poll"}
	}
	if _, err := s.Sync(ctx, defs...); err != nil {
		b.Fatal(err)
	}

	recv := &slowReceiver{taken: map[string]time.Time{}, runs: make(chan struct{}, n)}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	r := startRun(b, clock, "--db", dbPath, "--units", "minute", "--webhook", srv.URL)
	defer func() {
		if code := r.stop(); code != cli.ExitOK {
			b.Errorf("ticker run exited with %d: %s", code, r.stderr)
		}
	}()

	var late, floor []time.Duration
	for range b.N {
		// The floor first, on the same receiver: n requests, 16 at a time.
		begin := time.Now()
		floor = append(floor, bareRequests(b, srv.URL, n, begin)...)

		// Then passage: the minute boundary passes, its n slots fire.
		recv.mu.Lock()
		clear(recv.taken)
		recv.mu.Unlock()
		slot := clock.Now().Truncate(time.Minute).Add(time.Minute)
		begin = time.Now()
		if err := tick.AdvanceAndWait(ctx, clock, slot.Sub(clock.Now()), r.ticker); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			select {
			case <-recv.runs:
			case <-time.After(2 * time.Minute):
				b.Fatalf("%d of %d runs of %s delivered: %s", i, n, timefmt.Format(slot), r.stderr)
			}
		}
		recv.mu.Lock()
		for key, at := range recv.taken {
			if want := "@" + slot.Format(time.RFC3339); len(key) < len(want) || key[len(key)-len(want):] != want {
				b.Fatalf("delivered %s in the pass of %s", key, timefmt.Format(slot))
			}
			late = append(late, at.Sub(begin))
		}
		recv.mu.Unlock()
		clock.Advance(30 * time.Second) // off the boundary again
	}
	b.StopTimer()
	p99 := quantile(late, 0.99)
	b.ReportMetric(quantile(late, 0.5).Seconds(), "p50-late-s")
	b.ReportMetric(p99.Seconds(), "p99-late-s")
	b.ReportMetric(quantile(late, 1).Seconds(), "max-late-s")
	b.ReportMetric(quantile(floor, 0.99).Seconds(), "floor-p99-late-s")
	b.ReportMetric(quantile(floor, 0.99).Seconds()/p99.Seconds(), "vs-floor")
}

// bareRequests posts n bodies to url, 16 at a time, and returns when each
// was answered, after begin.
func bareRequests(b *testing.B, url string, n int, begin time.Time) []time.Duration {
	b.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	out := make([]time.Duration, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, err := client.Post(url, "application/json", nil)
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			out[i] = time.Since(begin)
		})
	}
	wg.Wait()
	return out
}

// quantile returns the q-quantile of ds (q = 1: the largest).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}
