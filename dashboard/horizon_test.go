package dashboard_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestTheSummaryNamesASessionHoldingTheHorizon: on PostgreSQL, a session
// idle in a transaction that holds an xid past the grace — a forgotten
// psql holding every delivery back — is named in the summary of every
// page (its pid, application and state) within one reading, and the
// summary clears once the transaction ends.
func TestTheSummaryNamesASessionHoldingTheHorizon(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.Postgres(t)
	f := newFixture(t, db)
	srv := f.serve(t, dashboard.WithHorizonGrace(100*time.Millisecond))

	held := sqldbtest.HoldHorizon(t)

	page := func() string {
		res, err := http.Get(srv.URL + "/schedules")
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		return string(body)
	}
	// The summary is read again each second (summaryTTL) on the
	// dashboard's clock, which is the fixture's fake one: moved on so
	// that every reading is fresh; the transaction's age is the server's.
	named := held.Named()
	require.Eventually(t, func() bool {
		f.clock.Advance(2 * time.Second)
		return strings.Contains(page(), named)
	}, 10*time.Second, 20*time.Millisecond, "the summary names %s", named)
	require.Contains(t, page(), `id="trouble-horizon-held"`)

	require.NoError(t, held.End())
	require.Eventually(t, func() bool {
		f.clock.Advance(2 * time.Second)
		return !strings.Contains(page(), named)
	}, 10*time.Second, 20*time.Millisecond, "no longer named once the transaction ended")
}
