package schedule_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/todolist"
)

// BenchmarkEveryMinute fires n schedules due at the same minute: runs per
// second, lateness (wall time from the minute's processing to each run's
// handler) p50 and p99, and the peak heap, for passage's scheduler on each
// backend (on PostgreSQL with one worker and with two, see
// todolist.WithWorkers) and for gocron/v2 holding the same n jobs in
// memory. n is 10,000; PASSAGE_BENCH_SCHEDULES=100000 sets it.
//
//	PASSAGE_TEST_POSTGRES=… go test ./schedule -run '^$' -bench BenchmarkEveryMinute -benchtime 1x
func BenchmarkEveryMinute(b *testing.B) {
	n := 10_000
	if v := os.Getenv("PASSAGE_BENCH_SCHEDULES"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Date(2026, 5, 1, 0, 0, 30, 0, time.UTC)
	for _, be := range sqldbtest.Backends() {
		workers := []int{1}
		if be.Name == "postgres" {
			workers = []int{1, 2}
		}
		for _, w := range workers {
			b.Run(fmt.Sprintf("passage/%s/n=%d/workers=%d", be.Name, n, w), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					db, _ := be.Open(b)
					clock := clockwork.NewFakeClockAt(start)
					late := newLateness(n)
					s, err := schedule.Open(context.Background(), db.DB, func(context.Context, *sqlx.Tx, schedule.Run) error {
						late.record()
						return nil
					}, schedule.WithClock(clock))
					if err != nil {
						b.Fatal(err)
					}
					every, err := schedule.Cron("* * * * *", nil)
					if err != nil {
						b.Fatal(err)
					}
					defs := make([]schedule.Definition, n)
					for i := range defs {
						defs[i] = schedule.Definition{Name: fmt.Sprint("s-", i), Spec: every, Command: "poll"}
					}
					if _, err := s.Sync(context.Background(), defs...); err != nil {
						b.Fatal(err)
					}
					p, err := s.Processor(todolist.WithBatchSize(1000), todolist.WithMaxItems(10*n), todolist.WithTimeBudget(time.Hour), todolist.WithWorkers(w))
					if err != nil {
						b.Fatal(err)
					}
					clock.Advance(30 * time.Second) // the minute passes
					runtime.GC()
					stop, peak := peakHeap()
					b.StartTimer()
					late.begin()
					for {
						res, err := p.Process(context.Background(), clock.Now())
						if err != nil {
							b.Fatal(err)
						}
						if res.Claimed == 0 {
							break
						}
					}
					late.report(b, n, peak, stop)
				}
			})
		}
	}
	b.Run(fmt.Sprintf("gocron/n=%d", n), func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			clock := clockwork.NewFakeClockAt(start)
			s, err := gocron.NewScheduler(gocron.WithClock(clock), gocron.WithLimitConcurrentJobs(uint(runtime.GOMAXPROCS(0)), gocron.LimitModeWait))
			if err != nil {
				b.Fatal(err)
			}
			late := newLateness(n)
			var wg sync.WaitGroup
			wg.Add(n)
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			for range n {
				if _, err := s.NewJob(gocron.CronJob("* * * * *", false), gocron.NewTask(func() { late.record(); wg.Done() })); err != nil {
					b.Fatal(err)
				}
			}
			s.Start()
			if err := clock.BlockUntilContext(context.Background(), n); err != nil {
				b.Fatal(err)
			}
			stop, peak := peakHeap()
			b.StartTimer()
			late.begin()
			clock.Advance(30 * time.Second)
			wg.Wait()
			late.report(b, n, peak, stop)
			b.StopTimer()
			_ = s.Shutdown()
		}
	})
}

// lateness collects, per run, the wall time since the minute began to be
// worked.
type lateness struct {
	at    time.Time
	n     atomic.Int64
	delay []time.Duration
}

func newLateness(n int) *lateness { return &lateness{delay: make([]time.Duration, n)} }

func (l *lateness) begin() { l.at = time.Now() }

func (l *lateness) record() {
	if i := l.n.Add(1) - 1; int(i) < len(l.delay) {
		l.delay[i] = time.Since(l.at)
	}
}

func (l *lateness) report(b *testing.B, n int, peak *atomic.Uint64, stop func()) {
	took := time.Since(l.at)
	b.StopTimer()
	stop()
	if got := int(l.n.Load()); got != n {
		b.Fatalf("%d runs of %d", got, n)
	}
	slices.Sort(l.delay)
	b.ReportMetric(float64(n)/took.Seconds(), "runs/s")
	b.ReportMetric(l.delay[n/2].Seconds(), "p50-late-s")
	b.ReportMetric(l.delay[n*99/100].Seconds(), "p99-late-s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

// peakHeap records the peak HeapInuse until stop is called.
func peakHeap() (stop func(), peak *atomic.Uint64) {
	peak = new(atomic.Uint64)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-finished }, peak
}
