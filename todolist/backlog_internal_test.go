package todolist

import (
	"context"
	"testing"
	"weak"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// Lists opened on one database with one provider share one reader of
// their backlog, which a list opened again does not grow: a dashboard
// opening a list per request adds no query to a collection.
func TestOneBacklogReaderPerMeterAndDatabase(t *testing.T) {
	db, _ := sqldbtest.SQLite(t)
	mp := sdkmetric.NewMeterProvider()
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	for _, name := range []string{"one", "one", "two", "one"} {
		_, err := Open(context.Background(), db.DB, name, WithMeterProvider(mp))
		require.NoError(t, err)
	}
	backlogs.Lock()
	r := backlogs.readers[backlogKey{meter: mp.Meter(scope), db: weak.Make(db.DB)}]
	backlogs.Unlock()
	require.NotNil(t, r)
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.lists, 2)
	require.Contains(t, r.lists, "one")
	require.Contains(t, r.lists, "two")
}
