package outbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/outbox"
)

// A decision and its record commit together; the relay delivers the
// record after the commit, under its key.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "outbox-example")
	defer os.RemoveAll(dir)
	db, err := sqldb.Open(ctx, filepath.Join(dir, "passage.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	box, err := outbox.Open(ctx, db.DB)
	if err != nil {
		panic(err)
	}

	// A sink the outbox has never seen delivers what is written from now
	// on (outbox.WithFrom(outbox.FromBeginning) for every record held).
	relay, _ := outbox.NewRelay(box, "webhook", func(_ context.Context, m outbox.Message) error {
		fmt.Printf("deliver %s (%s, attempt %d): %s\n", m.Key, m.Type, m.Attempt, m.Body)
		return nil // a refusal would be retried with backoff
	})

	tx, _ := db.BeginTxx(ctx, nil)
	// ... the deciding writes (a run recorded, an order cancelled) ...
	_ = box.WriteTx(ctx, tx, outbox.Record{Stream: "report", Key: "report@2026-11-26T09:00:00Z", Type: "ScheduleRun", Body: []byte(`{"slot":"09:00"}`)})
	_ = tx.Commit()

	if _, err := relay.Pass(ctx); err != nil {
		panic(err)
	}
	// Output:
	// deliver report@2026-11-26T09:00:00Z (ScheduleRun, attempt 1): {"slot":"09:00"}
}
