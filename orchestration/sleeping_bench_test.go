package orchestration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// BenchmarkWakeAmongSleeping wakes 1,000 due instances among many that
// sleep (due a year later) and reports the time per wake-up and the peak
// heap: both should not grow with the sleepers, since a wake-up asks the
// to-do list for what is due, not for every instance. 1,000,000 sleepers
// with PASSAGE_BENCH_MILLION=1 (seeding them takes a minute).
//
//	go test ./orchestration -run '^$' -bench BenchmarkWakeAmongSleeping -benchtime 1x
func BenchmarkWakeAmongSleeping(b *testing.B) {
	sizes := []int{1_000, 100_000}
	if os.Getenv("PASSAGE_BENCH_MILLION") != "" {
		sizes = append(sizes, 1_000_000)
	}
	const due = 1000
	for _, sleeping := range sizes {
		b.Run(fmt.Sprint("sleeping=", sleeping), func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				b.StopTimer()
				db, _ := sqldbtest.SQLite(b)
				clock := clockwork.NewFakeClockAt(t0)
				e, err := New(ctx, db.DB, WithClock(clock))
				if err != nil {
					b.Fatal(err)
				}
				if err := Register(e, "nap", func(ctx Context, _ int) (int, error) {
					return 1, ctx.Sleep(time.Minute)
				}); err != nil {
					b.Fatal(err)
				}
				seedSleepers(b, db, sleeping, t0.AddDate(1, 0, 0))
				p, err := e.Processor(todolist.WithBatchSize(1000))
				if err != nil {
					b.Fatal(err)
				}
				for i := range due {
					if _, err := Start(ctx, e, "nap", fmt.Sprint("due-", i), 0); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := p.Process(ctx, clock.Now()); err != nil { // they go to sleep for a minute
					b.Fatal(err)
				}
				clock.Advance(time.Minute)
				runtime.GC()
				stop, peak := sampleHeap()
				b.StartTimer()
				begin := time.Now()
				res, err := p.Process(ctx, clock.Now())
				took := time.Since(begin)
				b.StopTimer()
				stop()
				if err != nil || res.Claimed != due {
					b.Fatalf("woke %d of %d: %v", res.Claimed, due, err)
				}
				b.ReportMetric(float64(took.Microseconds())/due, "µs/wake-up")
				b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
			}
		})
	}
}

// seedSleepers inserts n suspended instances, their histories and their
// to-do items, in one transaction of plain SQL (Start would take minutes).
func seedSleepers(b *testing.B, db *sqldb.DB, n int, until time.Time) {
	b.Helper()
	tx, err := db.Beginx()
	if err != nil {
		b.Fatal(err)
	}
	ev, err := tx.Preparex(`INSERT INTO eventstore_events (stream, version, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	item, err := tx.Preparex(`INSERT INTO todolist_items (list, id, due, run_at) VALUES (?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	at, wake := sqldb.EncodeTime(t0), sqldb.EncodeTime(until)
	for i := range n {
		id := fmt.Sprint("sleeper-", i)
		if _, err := ev.Exec(streamOf(id), 1, "orchestration.Started", `{"Workflow":"nap","Input":0,"At":"2026-05-01T09:00:00Z"}`, at); err != nil {
			b.Fatal(err)
		}
		if _, err := ev.Exec(streamOf(id), 2, "orchestration.TimerScheduled", fmt.Sprintf(`{"Seq":0,"Until":%q}`, until.Format(time.RFC3339)), at); err != nil {
			b.Fatal(err)
		}
		if _, err := item.Exec(listName, id, wake, wake); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// sampleHeap records the peak HeapInuse until stop is called.
func sampleHeap() (stop func(), peak *atomic.Uint64) {
	peak = new(atomic.Uint64)
	done := make(chan struct{})
	finished := make(chan struct{})
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
