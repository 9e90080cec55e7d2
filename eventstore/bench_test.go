package eventstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// BenchmarkAppend measures Store.Append of one event to a new stream next to
// its floor, the same row written by a raw INSERT in its own transaction on
// the same database, and reports the ratio ("x-raw"). Both halves run in
// every iteration, so they share the machine's noise.
func BenchmarkAppend(b *testing.B) {
	for _, backend := range sqldbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			db, _ := backend.Open(b)
			ctx := context.Background()
			store, err := eventstore.Open(ctx, db.DB, newRegistry(b))
			require.NoError(b, err)
			raw := db.Rebind(`INSERT INTO eventstore_events (stream, version, type, data, recorded_at) VALUES (?, ?, ?, ?, ?) RETURNING position`)
			event := Deposited{Amount: 100, By: 1}

			var appendTime, rawTime time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := rawInsert(ctx, db, raw, fmt.Sprintf("raw-%d", i)); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if _, err := store.Append(ctx, fmt.Sprintf("account-%d", i), eventstore.NoStream, event); err != nil {
					b.Fatal(err)
				}
				rawTime += mid.Sub(start)
				appendTime += time.Since(mid)
			}
			n := float64(b.N)
			b.ReportMetric(float64(appendTime.Nanoseconds())/n, "ns/append")
			b.ReportMetric(float64(rawTime.Nanoseconds())/n, "ns/raw-insert")
			b.ReportMetric(float64(appendTime)/float64(rawTime), "x-raw")
		})
	}
}

func rawInsert(ctx context.Context, db *sqldb.DB, query, stream string) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var position int64
	err = tx.QueryRowxContext(ctx, query, stream, 1, "account.deposited", `{"Amount":100,"By":1}`, sqldb.EncodeTime(time.Now())).Scan(&position)
	if err != nil {
		return err
	}
	return tx.Commit()
}

// BenchmarkAppendMany appends one event to each of 1,000 new streams, once
// as one AppendMany and once as 1,000 Appends, in the same iteration, and
// reports both rates and the batch's speed-up ("x-appends"). Half of the
// batch's streams exist already and are appended to with their exact
// version, as a batch of decisions would; no entry conflicts.
func BenchmarkAppendMany(b *testing.B) {
	const streams = 1000
	for _, backend := range sqldbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			db, _ := backend.Open(b)
			ctx := context.Background()
			store, err := eventstore.Open(ctx, db.DB, newRegistry(b))
			require.NoError(b, err)
			event := Deposited{Amount: 100, By: 1}
			// prepare makes the streams of one round, half of them at
			// version 1, and the entries that append to them.
			prepare := func(round int, kind string) []eventstore.StreamAppend {
				b.StopTimer()
				defer b.StartTimer()
				batch := make([]eventstore.StreamAppend, streams)
				var existing []eventstore.StreamAppend
				for i := range batch {
					batch[i] = eventstore.StreamAppend{Stream: fmt.Sprintf("%s-%d-%d", kind, round, i), Expected: eventstore.NoStream, Events: []any{event}}
					if i%2 == 1 {
						existing = append(existing, batch[i])
						batch[i].Expected = eventstore.Exact(1)
					}
				}
				_, err := store.AppendMany(ctx, existing)
				require.NoError(b, err)
				return batch
			}

			var manyTime, oneTime time.Duration
			for i := 0; b.Loop(); i++ {
				batch := prepare(i, "many")
				start := time.Now()
				outcomes, err := store.AppendMany(ctx, batch)
				manyTime += time.Since(start)
				require.NoError(b, err)
				for _, o := range outcomes {
					require.NoError(b, o.Err())
				}

				batch = prepare(i, "one")
				start = time.Now()
				for _, e := range batch {
					if _, err := store.Append(ctx, e.Stream, e.Expected, e.Events...); err != nil {
						b.Fatal(err)
					}
				}
				oneTime += time.Since(start)
			}
			perSecond := func(d time.Duration) float64 { return float64(streams*b.N) / d.Seconds() }
			b.ReportMetric(perSecond(manyTime), "streams/s")
			b.ReportMetric(perSecond(oneTime), "append-streams/s")
			b.ReportMetric(float64(oneTime)/float64(manyTime), "x-appends")
		})
	}
}
