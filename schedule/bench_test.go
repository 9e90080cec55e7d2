package schedule_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
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
// Each passage pass first runs the floor (fireFloor) on a database of its
// own: the statements the design needs at the least, in raw SQL. Its
// rate, its p99 and the scheduler's rate against it (vs-floor) are
// reported beside the scheduler's own figures: what lateness the design
// itself allows on the machine, and how much of it is the scheduler's.
//
//	PASSAGE_TEST_POSTGRES=… go test ./schedule -run '^$' -bench BenchmarkEveryMinute -benchtime 1x
func BenchmarkEveryMinute(b *testing.B) {
	n := benchSchedules(b)
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
					// The floor first, on a database of its own: the
					// design's statements in raw SQL, on as many
					// connections as the scheduler has workers (see
					// fireFloor).
					floor := newLateness()
					db, _, clock := everyMinute(b, be, n, start, nil)
					clock.Advance(30 * time.Second)
					floor.begin()
					if err := fireFloor(context.Background(), db.DB, clock.Now(), 1000, w, floor); err != nil {
						b.Fatal(err)
					}
					floor.end(b, n)
					floorP99, floorRate := floor.quantile(0.99), floor.rate(n)
					floor = nil
					_ = db.Close() // its pool's buffers are not the scheduler's heap

					late := newLateness()
					_, s, clock := everyMinute(b, be, n, start, late)
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
					b.ReportMetric(floorP99.Seconds(), "floor-p99-late-s")
					b.ReportMetric(floorRate, "floor-runs/s")
					b.ReportMetric(late.rate(n)/floorRate, "vs-floor")
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
			late := newLateness()
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
// worked, counted in buckets of a millisecond (the last bucket takes all
// that is later): a fixed 512 KiB whatever the number of runs, so that
// the peak heap measured is the scheduler's, flat or not, and not a
// record that grows with n.
type lateness struct {
	at      time.Time
	took    time.Duration
	n       atomic.Int64
	buckets [latenessBuckets]atomic.Int32
}

const latenessBuckets = 1 << 17 // of a millisecond each: over two minutes

func newLateness() *lateness { return new(lateness) }

func (l *lateness) begin() { l.at = time.Now() }

func (l *lateness) record() { l.add(time.Since(l.at)) }

// add counts a run d late and returns the runs counted so far.
func (l *lateness) add(d time.Duration) int64 {
	l.buckets[min(max(int(d/time.Millisecond), 0), latenessBuckets-1)].Add(1)
	return l.n.Add(1)
}

// end stops the clock of l, which must hold n runs.
func (l *lateness) end(b *testing.B, n int) {
	l.took = time.Since(l.at)
	if got := int(l.n.Load()); got != n {
		b.Fatalf("%d runs of %d", got, n)
	}
}

// quantile is the lateness that a fraction q of the runs did not exceed,
// to the millisecond above.
func (l *lateness) quantile(q float64) time.Duration {
	want := min(int64(q*float64(l.n.Load())), l.n.Load()-1)
	var seen int64
	for i := range l.buckets {
		if seen += int64(l.buckets[i].Load()); seen > want {
			return time.Duration(i+1) * time.Millisecond
		}
	}
	return latenessBuckets * time.Millisecond
}

func (l *lateness) rate(n int) float64 { return float64(n) / l.took.Seconds() }

func (l *lateness) report(b *testing.B, n int, peak *atomic.Uint64, stop func()) {
	l.end(b, n)
	b.StopTimer()
	stop()
	b.ReportMetric(l.rate(n), "runs/s")
	b.ReportMetric(l.quantile(0.50).Seconds(), "p50-late-s")
	b.ReportMetric(l.quantile(0.99).Seconds(), "p99-late-s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

// everyMinute opens a database of be with n schedules firing every
// minute, each run recorded in late (when not nil), the clock at start.
func everyMinute(b *testing.B, be sqldbtest.Backend, n int, start time.Time, late *lateness) (*sqldb.DB, *schedule.Scheduler, *clockwork.FakeClock) {
	db, _ := be.Open(b)
	clock := clockwork.NewFakeClockAt(start)
	s, err := schedule.Open(context.Background(), db.DB, func(context.Context, *sqlx.Tx, schedule.Run) error {
		if late != nil {
			late.record()
		}
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
	return db, s, clock
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

// BenchmarkEveryMinuteSpread is BenchmarkEveryMinute's load — n schedules
// each firing every minute — with their slots spread over the minute by
// Definition.Jitter, worked by a todolist.Runner on the real clock as a
// deployment would: it waits for the first minute to pass (a minute of
// wall time), so it runs only when PASSAGE_BENCH_SPREAD is set. Lateness
// is the wall time from each slot's due instant (the slot plus its jitter)
// to its handler.
//
//	PASSAGE_BENCH_SPREAD=1 PASSAGE_BENCH_SCHEDULES=100000 PASSAGE_TEST_POSTGRES=… go test ./schedule -run '^$' -bench BenchmarkEveryMinuteSpread -benchtime 1x
func BenchmarkEveryMinuteSpread(b *testing.B) {
	if os.Getenv("PASSAGE_BENCH_SPREAD") == "" {
		b.Skip("a minute of wall time a pass: set PASSAGE_BENCH_SPREAD=1")
	}
	n := benchSchedules(b)
	for _, be := range sqldbtest.Backends() {
		b.Run(fmt.Sprintf("passage/%s/n=%d", be.Name, n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				db, _ := be.Open(b)
				var (
					late  = newLateness()
					early atomic.Int64
					done  = make(chan struct{})
					// Room to store the schedules first (Sync takes 20 µs
					// a schedule or less).
					anchor  = time.Now().Add(5*time.Second + time.Duration(n)*100*time.Microsecond).Truncate(time.Second)
					minute  = anchor.Add(time.Minute)
					handler = func(_ context.Context, _ *sqlx.Tx, r schedule.Run) error {
						// The due instant as Definition.Jitter documents it:
						// an offset below Jitter from the slot id's FNV-1a.
						h := fnv.New64a()
						h.Write([]byte(r.SlotID))
						d := time.Since(r.Slot.Add(time.Duration(h.Sum64() % uint64(time.Minute))))
						if d < 0 {
							early.Add(1)
						}
						if late.add(d) == int64(n) {
							close(done)
						}
						return nil
					}
				)
				s, err := schedule.Open(context.Background(), db.DB, handler)
				if err != nil {
					b.Fatal(err)
				}
				every, err := schedule.Every(time.Minute, anchor)
				if err != nil {
					b.Fatal(err)
				}
				defs := make([]schedule.Definition, n)
				for i := range defs {
					defs[i] = schedule.Definition{Name: fmt.Sprint("s-", i), Spec: every, Command: "poll", Jitter: time.Minute}
				}
				if _, err := s.Sync(context.Background(), defs...); err != nil {
					b.Fatal(err)
				}
				if time.Now().After(anchor) {
					b.Fatalf("storing %d schedules took past their first slot", n)
				}
				p, err := s.Processor()
				if err != nil {
					b.Fatal(err)
				}
				r, err := todolist.NewRunner(p)
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				stopped := make(chan struct{})
				runtime.GC()
				stop, peak := peakHeap()
				b.StartTimer()
				go func() { _ = r.Run(ctx); close(stopped) }()
				select {
				case <-done:
				case <-time.After(time.Until(minute) + time.Minute):
					b.Fatalf("%d runs of %d a minute after the last was due", late.n.Load(), n)
				}
				b.StopTimer()
				cancel()
				<-stopped
				stop()
				if early.Load() > 0 {
					b.Fatalf("%d runs fired before they were due", early.Load())
				}
				b.ReportMetric(late.quantile(0.50).Seconds()*1000, "p50-late-ms")
				b.ReportMetric(late.quantile(0.99).Seconds()*1000, "p99-late-ms")
				b.ReportMetric(late.quantile(1).Seconds()*1000, "max-late-ms")
				b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
			}
		})
	}
}

// BenchmarkSync stores n schedules (the first start) and declares them
// again unchanged (every start after it): the seconds each Sync takes.
// n is 10,000; PASSAGE_BENCH_SCHEDULES=100000 sets it.
//
//	PASSAGE_TEST_POSTGRES=… go test ./schedule -run '^$' -bench BenchmarkSync -benchtime 1x
func BenchmarkSync(b *testing.B) {
	n := benchSchedules(b)
	every, err := schedule.Cron("* * * * *", nil)
	if err != nil {
		b.Fatal(err)
	}
	defs := make([]schedule.Definition, n)
	for i := range defs {
		defs[i] = schedule.Definition{Name: fmt.Sprint("s-", i), Spec: every, Command: "poll"}
	}
	for _, be := range sqldbtest.Backends() {
		b.Run(fmt.Sprintf("%s/n=%d", be.Name, n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				db, _ := be.Open(b)
				clock := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 0, 0, 30, 0, time.UTC))
				s, err := schedule.Open(context.Background(), db.DB, func(context.Context, *sqlx.Tx, schedule.Run) error { return nil }, schedule.WithClock(clock))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				began := time.Now()
				res, err := s.Sync(context.Background(), defs...)
				first := time.Since(began)
				if err != nil || len(res.Added) != n {
					b.Fatalf("first Sync: %d added, %v", len(res.Added), err)
				}
				// A later start: a new process declares the same schedules.
				s, err = schedule.Open(context.Background(), db.DB, func(context.Context, *sqlx.Tx, schedule.Run) error { return nil }, schedule.WithClock(clock))
				if err != nil {
					b.Fatal(err)
				}
				began = time.Now()
				res, err = s.Sync(context.Background(), defs...)
				again := time.Since(began)
				b.StopTimer()
				if err != nil || len(res.Unchanged) != n {
					b.Fatalf("second Sync: %d unchanged, %v", len(res.Unchanged), err)
				}
				b.ReportMetric(first.Seconds(), "first-sync-s")
				b.ReportMetric(again.Seconds(), "unchanged-sync-s")
			}
		})
	}
}

// benchSchedules is the number of schedules a benchmark works: 10,000, or
// PASSAGE_BENCH_SCHEDULES.
func benchSchedules(b *testing.B) int {
	b.Helper()
	n := 10_000
	if v := os.Getenv("PASSAGE_BENCH_SCHEDULES"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
			b.Fatalf("PASSAGE_BENCH_SCHEDULES=%q: want a positive number of schedules", v)
		}
	}
	return n
}
