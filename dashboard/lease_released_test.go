package dashboard_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/tick"
)

// The tickers page said "no ticker has emitted here" after a "ticker run
// --once", which releases the lease it took at every run (issue 35, what
// a newcomer met): with cursors and no lease it now says the lease was
// released, and keeps the old words for a database no ticker ran on.
func TestTheTickersPageTellsAReleasedLeaseFromNoTicker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := &fixture{db: newSQLite(t)}
	srv := f.serveAt(t, start)
	code, page := getPage(t, srv.URL+"/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "No lease taken: no ticker has emitted here.")

	store, err := tick.NewSQLStore(ctx, f.db.DB)
	require.NoError(t, err)
	b, err := bus.New()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close(ctx)) })
	tk, err := tick.New(b, store, tick.WithClock(clockwork.NewFakeClockAt(start)), tick.WithUnits(tick.Minute), tick.WithLease("once", time.Minute))
	require.NoError(t, err)
	require.NoError(t, tk.EmitDue(ctx))
	require.NoError(t, tk.Stop(ctx)) // releases the lease, as run --once does

	code, page = getPage(t, srv.URL+"/")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, page, "no ticker has emitted here")
	require.Contains(t, page, "No lease held now: the last ticker released it as it stopped")
}
