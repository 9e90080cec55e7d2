package outbox_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/outbox"
)

// BenchmarkRelay delivers the same records, benchStreams streams of
// benchEach records each, to a sink that takes everything at once, from
// a fresh checkpoint every op (a new sink name), three ways on each
// backend:
//
//   - floor: the records read in order, a page at a time, and handed to
//     the same sink, with no checkpoint, refusal or horizon: what any relay
//     must at least do;
//   - pass: Pass called until the sink took them all (a pass delivers its
//     page's streams in parallel, then waits for the slowest);
//   - run: Run started and stopped once the sink took them all (streams
//     go on independently, WithParallel at a time);
//   - pass-slow-1pc and run-slow-1pc: the same with a sink that answers
//     one request in a hundred after 20 ms (a receiver's slow path): each
//     pass waits for its slowest, Run does not.
//
// Each reports records/s beside ns/op, B/op and allocs/op.
func BenchmarkRelay(b *testing.B) {
	for _, backend := range sqldbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			ctx := context.Background()
			db, _ := backend.Open(b)
			o, err := outbox.Open(ctx, db.DB, outbox.WithClock(clockwork.NewRealClock()))
			if err != nil {
				b.Fatal(err)
			}
			const total = benchStreams * benchEach
			for i := range benchEach {
				tx, err := db.BeginTxx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				for s := range benchStreams {
					stream := fmt.Sprint("stream-", s)
					if err := o.WriteTx(ctx, tx, rec(stream, fmt.Sprintf("%s/%d", stream, i))); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			var took atomic.Int64
			done := make(chan struct{}, 1)
			sink := func(_ context.Context, m outbox.Message) error {
				if took.Add(1) == total {
					done <- struct{}{}
				}
				return nil
			}
			// slowSink answers one request in a hundred after 20 ms, as a
			// receiver with a slow path does.
			slowSink := func(ctx context.Context, m outbox.Message) error {
				if m.Position%100 == 0 {
					time.Sleep(20 * time.Millisecond)
				}
				return sink(ctx, m)
			}
			sinkName := 0
			newRelayTo := func(b *testing.B, deliver outbox.Deliver) *outbox.Relay {
				sinkName++
				took.Store(0)
				r, err := outbox.NewRelay(o, fmt.Sprint("bench-", sinkName), deliver, outbox.WithPoll(5*time.Millisecond),
					outbox.WithFrom(outbox.FromBeginning))
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			perSecond := func(b *testing.B) {
				b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			}

			b.Run("floor", func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					took.Store(0)
					var after int64
					for {
						var rows []struct {
							ID     int64  `db:"id"`
							Key    string `db:"key"`
							Stream string `db:"stream"`
							Type   string `db:"type"`
							Body   []byte `db:"body"`
						}
						if err := db.SelectContext(ctx, &rows, db.Rebind(`SELECT id, key, stream, type, body FROM outbox_records WHERE id > ? ORDER BY id LIMIT 1000`), after); err != nil {
							b.Fatal(err)
						}
						for _, r := range rows {
							_ = sink(ctx, outbox.Message{Record: outbox.Record{Stream: r.Stream, Key: r.Key, Type: r.Type, Body: r.Body}, Position: r.ID, Attempt: 1})
							after = r.ID
						}
						if len(rows) < 1000 {
							break
						}
					}
					<-done
				}
				perSecond(b)
			})
			passes := func(b *testing.B, r *outbox.Relay) {
				for took.Load() < total {
					if _, err := r.Pass(ctx); err != nil {
						b.Fatal(err)
					}
				}
				<-done
			}
			run := func(b *testing.B, r *outbox.Relay) {
				rctx, stop := context.WithCancel(ctx)
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					_ = r.Run(rctx, func(err error) { b.Error(err) })
				}()
				<-done
				stop()
				<-stopped
			}
			for _, c := range []struct {
				name    string
				deliver outbox.Deliver
				relay   func(*testing.B, *outbox.Relay)
			}{
				{"pass", sink, passes},
				{"run", sink, run},
				{"pass-slow-1pc", slowSink, passes},
				{"run-slow-1pc", slowSink, run},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for range b.N {
						c.relay(b, newRelayTo(b, c.deliver))
					}
					perSecond(b)
				})
			}
		})
	}
}

// The benchmark's records: many streams, a few records each, as a
// minute's schedule runs are.
const benchStreams, benchEach = 500, 4
