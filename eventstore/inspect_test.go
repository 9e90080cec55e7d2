package eventstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// HasState tells a database without an event store from one where a store
// was opened, even one without events, and creates nothing to find out.
func TestHasStateSaysWhetherAStoreWasOpenedOnTheDatabase(t *testing.T) {
	t.Parallel()
	sqldbtest.CheckHasState(t, eventstore.HasState, "todolist_items", func(t *testing.T, db *sqldb.DB) *eventstore.Store {
		store, err := eventstore.Open(context.Background(), db.DB, newRegistry(t))
		require.NoError(t, err)
		return store
	}, nil)
}
