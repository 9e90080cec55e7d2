package eventstore

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// HasState reports whether the database q reads holds an event store:
// whether [Open] ever created the package's table there, whatever it
// holds now. Unlike Open it never migrates, so it takes no write lock and
// creates nothing; q is a *sqlx.DB or a *sqlx.Tx, whose snapshot later
// reads then share.
func HasState(ctx context.Context, q sqlx.ExtContext) (bool, error) {
	ok, err := sqldb.HasTableWithPrefix(ctx, q, "eventstore_")
	if err != nil {
		return false, fmt.Errorf("eventstore: look for the event store's table: %w", err)
	}
	return ok, nil
}
