package todolist_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// The benchmarks compare the package with hand-written SQL doing the same
// work on the same table in the same run, and report the ratio: the floor
// is what the database costs, the ratio what the package adds.

var (
	// benchPast is when the due items of the benchmarks fall due: before
	// any real clock's now, so a processor on the real clock takes them.
	benchPast = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	// benchFuture is when the items that are not due fall due.
	benchFuture = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// seed bulk-inserts n items into list in one statement: IDs prefix+number
// (sequential) or random UUIDs, due at from, from+step, from+2·step, …
func seed(b *testing.B, db *sqldb.DB, list string, n int, prefix string, random bool, from time.Time, step time.Duration) {
	b.Helper()
	var query string
	args := []any{list}
	if db.IsPostgres() {
		key := `? || lpad(i::text, 9, '0')`
		if random {
			key = `gen_random_uuid()::text`
		}
		query = `INSERT INTO todolist_items (list, id, due, run_at)
SELECT ?, ` + key + `, ?::bigint + i * ?::bigint, ?::bigint + i * ?::bigint FROM generate_series(0::bigint, ?::bigint - 1) AS i`
	} else {
		key := `? || printf('%09d', i)`
		if random {
			key = `lower(hex(randomblob(16)))`
		}
		query = `WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < ?)
INSERT INTO todolist_items (list, id, due, run_at) SELECT ?, ` + key + `, ? + i * ?, ? + i * ? FROM seq`
		args = []any{n, list}
	}
	if !random {
		args = append(args, prefix)
	}
	args = append(args, sqldb.EncodeTime(from), int64(step), sqldb.EncodeTime(from), int64(step))
	if db.IsPostgres() {
		args = append(args, n)
	}
	_, err := db.ExecContext(context.Background(), db.Rebind(query), args...)
	require.NoError(b, err)
	if db.IsPostgres() {
		// Autovacuum may be off (the CI machine's server runs without
		// it), and each round leaves the previous contender's dead rows:
		// vacuum here, outside the timer, so every contender starts on a
		// table in the same state, as a server that vacuums would give.
		_, err = db.ExecContext(context.Background(), `VACUUM ANALYZE todolist_items, todolist_claims`)
		require.NoError(b, err)
	}
}

// bigSQLite opens the list "bench" in a fresh SQLite database for a
// benchmark that fills it with a million rows, which -short skips.
func bigSQLite(b *testing.B) (*sqldb.DB, *todolist.List) {
	b.Helper()
	if testing.Short() {
		b.Skip("1,000,000-row setup")
	}
	db, _ := sqldbtest.SQLite(b)
	l, err := todolist.Open(context.Background(), db.DB, "bench")
	require.NoError(b, err)
	return db, l
}

// BenchmarkDue fetches a batch of 1,000 due items from a list of 1,000,000
// of which 1,000, 10,000 or 100,000 are due: the time must not grow with
// the due count. Floors: the same query by hand, on the indexed column and
// on an unindexed one.
func BenchmarkDue(b *testing.B) {
	db, l := bigSQLite(b)
	ctx := context.Background()
	// Item i is due i seconds after benchPast, so "now" picks the count.
	seed(b, db, "bench", 1_000_000, "item-", false, benchPast, time.Second)

	// column is run_at (indexed) or due (not indexed; equal to run_at here).
	raw := func(b *testing.B, column string, now time.Time) int {
		rows, err := db.QueryContext(ctx, `SELECT id, due, run_at, attempts, last_error, parked, claim, claimed_until FROM todolist_items
WHERE list = ? AND parked = 0 AND `+column+` <= ? ORDER BY `+column+`, id LIMIT 1000`, "bench", sqldb.EncodeTime(now))
		require.NoError(b, err)
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id, lastErr, claim string
			var due, runAt, attempts, parked, claimedUntil int64
			require.NoError(b, rows.Scan(&id, &due, &runAt, &attempts, &lastErr, &parked, &claim, &claimedUntil))
			n++
		}
		require.NoError(b, rows.Err())
		return n
	}
	for _, due := range []int{1_000, 10_000, 100_000} {
		now := benchPast.Add(time.Duration(due-1) * time.Second)
		b.Run(fmt.Sprintf("due=%d", due), func(b *testing.B) {
			var list, floor time.Duration
			for b.Loop() {
				start := time.Now()
				items, err := l.Due(ctx, now, 1000)
				list += time.Since(start)
				require.NoError(b, err)
				require.Len(b, items, 1000)

				start = time.Now()
				require.Equal(b, 1000, raw(b, "run_at", now))
				floor += time.Since(start)
			}
			b.ReportMetric(float64(list.Microseconds())/1000/float64(b.N), "ms/batch")
			b.ReportMetric(float64(floor.Microseconds())/1000/float64(b.N), "floor-ms/batch")
			b.ReportMetric(float64(floor)/float64(list), "ratio")
		})
		b.Run(fmt.Sprintf("due=%d/unindexed-floor", due), func(b *testing.B) {
			for b.Loop() {
				require.Equal(b, 1000, raw(b, "due", now))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/batch")
		})
	}
}

// rawLoop is the hand-written batched loop: claim a batch by writing a
// lease on its rows (with FOR UPDATE SKIP LOCKED on PostgreSQL), "act"
// (nothing), delete the batch by ID in one statement, until nothing is
// due. On SQLite these are the processor's own statements; on PostgreSQL
// the processor holds a batch with one claim row instead (see sql.go), and
// cteLoop is the floor that matters.
func rawLoop(b *testing.B, db *sqldb.DB, list string, cutoff time.Time) int {
	ctx := context.Background()
	claim := `WITH picked AS (SELECT id FROM todolist_items WHERE list = ? AND parked = 0 AND run_at <= ? AND claimed_until <= ? ORDER BY run_at LIMIT ?)
UPDATE todolist_items SET claim = ?, claimed_until = ? WHERE list = ? AND id IN (SELECT id FROM picked)
RETURNING id, due, attempts, last_error`
	if db.IsPostgres() {
		claim = `WITH picked AS (SELECT id FROM todolist_items WHERE list = ? AND parked = 0 AND run_at <= ? AND claimed_until <= ? ORDER BY run_at LIMIT ? FOR UPDATE SKIP LOCKED)
UPDATE todolist_items AS t SET claim = ?, claimed_until = ? FROM picked WHERE t.list = ? AND t.id = picked.id
RETURNING t.id, t.due, t.attempts, t.last_error`
	}
	claim = db.Rebind(claim)
	placeholders := strings.TrimSuffix(strings.Repeat("?, ", 1000), ", ")
	total := 0
	for {
		token := uuid.NewString()
		now := time.Now()
		rows, err := db.QueryContext(ctx, claim, list, sqldb.EncodeTime(cutoff), sqldb.EncodeTime(now), 1000, token, sqldb.EncodeTime(now.Add(time.Minute)), list)
		require.NoError(b, err)
		args := []any{list, token}
		for rows.Next() {
			var id, lastErr string
			var due, attempts int64
			require.NoError(b, rows.Scan(&id, &due, &attempts, &lastErr))
			args = append(args, id)
		}
		require.NoError(b, rows.Err())
		require.NoError(b, rows.Close())
		n := len(args) - 2
		if n > 0 {
			in := placeholders
			if n < 1000 {
				in = placeholders[:3*n-2]
			}
			_, err = db.ExecContext(ctx, db.Rebind(`DELETE FROM todolist_items WHERE list = ? AND claim = ? AND id IN (`+in+`)`), args...)
			require.NoError(b, err)
		}
		total += n
		if n < 1000 {
			return total
		}
	}
}

// cteLoop is PostgreSQL's set-based floor: claim and delete a batch in one
// statement, which leaves no room for an action.
func cteLoop(b *testing.B, db *sqldb.DB, list string, cutoff time.Time) int {
	q := db.Rebind(`WITH picked AS (SELECT id FROM todolist_items WHERE list = ? AND parked = 0 AND run_at <= ? ORDER BY run_at LIMIT 1000 FOR UPDATE SKIP LOCKED)
DELETE FROM todolist_items AS t USING picked WHERE t.list = ? AND t.id = picked.id`)
	total := 0
	for {
		r, err := db.ExecContext(context.Background(), q, list, sqldb.EncodeTime(cutoff), list)
		require.NoError(b, err)
		n, err := r.RowsAffected()
		require.NoError(b, err)
		total += int(n)
		if n < 1000 {
			return total
		}
	}
}

// inParallel runs work on workers goroutines and returns the items they
// worked and how long it took.
func inParallel(workers int, work func() int) (int, time.Duration) {
	start := time.Now()
	counts := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { counts[w] = work() })
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	return total, time.Since(start)
}

// BenchmarkProcess works 100,000 due items in a table of 1,000,000 with a
// no-op action, against the hand-written loop of the same statements
// (target: ratio ≥ 0.8), for sequential and random keys, on every backend;
// on PostgreSQL also with two workers and against the one-CTE floor.
func BenchmarkProcess(b *testing.B) {
	if testing.Short() {
		b.Skip("1,000,000-row setup")
	}
	const due, total = 100_000, 1_000_000
	for _, backend := range sqldbtest.Backends() {
		for _, keys := range []string{"sequential", "random"} {
			b.Run(backend.Name+"/keys="+keys, func(b *testing.B) {
				db, _ := backend.Open(b)
				ctx := context.Background()
				l, err := todolist.Open(ctx, db.DB, "bench")
				require.NoError(b, err)
				random := keys == "random"
				seed(b, db, "bench", total-due, "base-", random, benchFuture, time.Second)
				workerCounts := []int{1}
				if db.IsPostgres() {
					workerCounts = []int{1, 2}
				}
				for _, workers := range workerCounts {
					b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
						p, err := todolist.NewProcessor(l, succeed, todolist.WithTimeBudget(0))
						require.NoError(b, err)
						list := func() int {
							r, err := p.Process(ctx, time.Now())
							require.NoError(b, err)
							return r.Done
						}
						raw := func() int { return rawLoop(b, db, "bench", time.Now()) }
						cte := func() int { return cteLoop(b, db, "bench", time.Now()) }
						run := func(work func() int, spent *time.Duration) {
							b.StopTimer()
							seed(b, db, "bench", due, "due-", random, benchPast, time.Millisecond)
							b.StartTimer()
							n, d := inParallel(workers, work)
							require.Equal(b, due, n)
							*spent += d
						}
						var listTime, rawTime, cteTime time.Duration
						for i := 0; b.Loop(); i++ {
							// Alternate which goes first, so that neither
							// always meets the other's leftover WAL.
							if i%2 == 0 {
								run(raw, &rawTime)
								run(list, &listTime)
							} else {
								run(list, &listTime)
								run(raw, &rawTime)
							}
							if db.IsPostgres() {
								run(cte, &cteTime)
							}
						}
						perSecond := func(d time.Duration) float64 { return float64(due*b.N) / d.Seconds() }
						b.ReportMetric(perSecond(listTime), "items/s")
						b.ReportMetric(perSecond(rawTime), "floor-items/s")
						b.ReportMetric(float64(rawTime)/float64(listTime), "ratio")
						if db.IsPostgres() {
							b.ReportMetric(perSecond(cteTime), "cte-floor-items/s")
							b.ReportMetric(float64(cteTime)/float64(listTime), "cte-ratio")
						}
					})
				}
			})
		}
	}
}

// BenchmarkProcessMemory works 1,000,000 due items with a no-op action and
// reports the peak Go heap in use while doing so (target: under 64 MiB):
// batches keep at most one batch of items in memory.
func BenchmarkProcessMemory(b *testing.B) {
	db, l := bigSQLite(b)
	ctx := context.Background()
	p, err := todolist.NewProcessor(l, succeed, todolist.WithTimeBudget(0))
	require.NoError(b, err)
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		seed(b, db, "bench", 1_000_000, "item-", true, benchPast, time.Microsecond)
		runtime.GC()
		b.StartTimer()

		stop := make(chan struct{})
		sampled := make(chan uint64)
		go func() {
			var highest uint64
			var m runtime.MemStats
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				runtime.ReadMemStats(&m)
				highest = max(highest, m.HeapInuse)
				select {
				case <-stop:
					sampled <- highest
					return
				case <-t.C:
				}
			}
		}()
		r, err := p.Process(ctx, time.Now())
		close(stop)
		peak = max(peak, <-sampled)
		require.NoError(b, err)
		require.Equal(b, 1_000_000, r.Done)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(1_000_000*b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkAddMany adds 10,000 new items (random UUIDs, as order IDs are)
// in one AddMany, next to its floor in the same run: the same rows written
// by hand-made multi-row INSERTs of 1,000 rows each (no upsert clause), in
// one transaction. It reports both rates and their ratio (target ≥ 0.8),
// and, for scale, the rate of one AddTx per item in one transaction. The
// chunk=N variants show how the statement size chosen was picked.
func BenchmarkAddMany(b *testing.B) {
	const n = 10_000
	for _, backend := range sqldbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			db, _ := backend.Open(b)
			ctx := context.Background()
			l, err := todolist.Open(ctx, db.DB, "bench")
			require.NoError(b, err)
			items := make([]todolist.NewItem, n)
			fresh := func() {
				for i := range items {
					items[i] = todolist.NewItem{ID: uuid.NewString(), Due: benchPast.Add(time.Duration(i) * time.Millisecond)}
				}
			}
			// empty clears the table outside the timer, so every round
			// starts from the same table.
			empty := func() {
				b.StopTimer()
				_, err := db.ExecContext(ctx, `DELETE FROM todolist_items`)
				require.NoError(b, err)
				if db.IsPostgres() {
					_, err = db.ExecContext(ctx, `VACUUM ANALYZE todolist_items`)
					require.NoError(b, err)
				}
				fresh()
				b.StartTimer()
			}
			// floor prepares its full-chunk statement once, as a careful
			// hand would.
			floor := func() {
				tx, err := db.BeginTxx(ctx, nil)
				require.NoError(b, err)
				defer func() { _ = tx.Rollback() }()
				values := func(rows int) string {
					return db.Rebind(`INSERT INTO todolist_items (list, id, due, run_at) VALUES ` +
						strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", rows), ", "))
				}
				full, err := tx.PrepareContext(ctx, values(1000))
				require.NoError(b, err)
				defer func() { _ = full.Close() }()
				args := make([]any, 0, 4*1000)
				for start := 0; start < n; start += 1000 {
					chunk := items[start:min(start+1000, n)]
					args = args[:0]
					for _, it := range chunk {
						at := sqldb.EncodeTime(it.Due)
						args = append(args, "floor", it.ID, at, at)
					}
					if len(chunk) == 1000 {
						_, err = full.ExecContext(ctx, args...)
					} else {
						_, err = tx.ExecContext(ctx, values(len(chunk)), args...)
					}
					require.NoError(b, err)
				}
				require.NoError(b, tx.Commit())
			}
			one := func() {
				tx, err := db.BeginTxx(ctx, nil)
				require.NoError(b, err)
				defer func() { _ = tx.Rollback() }()
				for _, it := range items {
					require.NoError(b, l.AddTx(ctx, tx, it.ID, it.Due))
				}
				require.NoError(b, tx.Commit())
			}
			timed := func(f func(), spent *time.Duration) {
				empty()
				start := time.Now()
				f()
				*spent += time.Since(start)
			}
			many := func() { require.NoError(b, l.AddMany(ctx, items)) }

			b.Run("vs-floor", func(b *testing.B) {
				var manyTime, floorTime, oneTime time.Duration
				for i := 0; b.Loop(); i++ {
					// Alternate which goes first, as BenchmarkProcess does.
					if i%2 == 0 {
						timed(floor, &floorTime)
						timed(many, &manyTime)
					} else {
						timed(many, &manyTime)
						timed(floor, &floorTime)
					}
					timed(one, &oneTime)
				}
				perSecond := func(d time.Duration) float64 { return float64(n*b.N) / d.Seconds() }
				b.ReportMetric(perSecond(manyTime), "items/s")
				b.ReportMetric(perSecond(floorTime), "floor-items/s")
				b.ReportMetric(float64(floorTime)/float64(manyTime), "ratio")
				b.ReportMetric(perSecond(oneTime), "addtx-items/s")
			})

			for _, chunk := range []int{100, 500, 1000, 2000, 5000} {
				b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
					todolist.SetAddManyChunk(l, chunk)
					defer todolist.SetAddManyChunk(l, 0)
					var spent time.Duration
					for b.Loop() {
						timed(many, &spent)
					}
					b.ReportMetric(float64(n*b.N)/spent.Seconds(), "items/s")
				})
			}
		})
	}
}
