package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// ReadSize returns how many records the outbox of q's database holds,
// delivered or not, and when the oldest was recorded (zero when none):
// the figures of the passage.outbox.records and passage.outbox.oldest.age
// gauges, for a status page. Like the other packages' inspection
// functions it never migrates: a database whose outbox was never opened
// holds none. q is a *sqlx.DB, or a *sqlx.Tx for a snapshot of several
// reads. It counts the whole table: a second or so on tens of millions
// of records.
func ReadSize(ctx context.Context, q sqlx.ExtContext) (records int, oldest time.Time, err error) {
	tables, err := sqldb.Tables(ctx, q)
	if err != nil || !tables["outbox_records"] {
		return 0, time.Time{}, wrapRead(err)
	}
	var at int64
	if err := q.QueryRowxContext(ctx, `SELECT COUNT(*), COALESCE(MIN(recorded_at), 0) FROM outbox_records`).Scan(&records, &at); err != nil {
		return 0, time.Time{}, wrapRead(err)
	}
	if records > 0 {
		oldest = sqldb.DecodeTime(at)
	}
	return records, oldest, nil
}

func wrapRead(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("outbox: read its size: %w", err)
}
