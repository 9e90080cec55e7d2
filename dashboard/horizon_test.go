package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestTheSummaryNamesASessionHoldingTheHorizon: on PostgreSQL, a session
// idle in a transaction that holds an xid past the grace — a forgotten
// psql holding every delivery back — is named in the summary of every
// page (its pid, application and state) within one reading, and the
// summary clears once the transaction ends.
func TestTheSummaryNamesASessionHoldingTheHorizon(t *testing.T) {
	t.Parallel()
	base := os.Getenv(sqldbtest.PostgresEnv)
	if base == "" {
		t.Skip(sqldbtest.PostgresEnv + " is not set")
	}
	ctx := context.Background()
	db, _ := sqldbtest.Postgres(t)
	f := newFixture(t, db)
	srv := f.serve(t, dashboard.WithHorizonGrace(100*time.Millisecond))

	app := fmt.Sprintf("passage_dashboard_horizon_%d", os.Getpid())
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	holder, err := sqldb.Open(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close() })
	tx, err := holder.BeginTxx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	var pid int
	var xid string
	require.NoError(t, tx.QueryRowContext(ctx, `SELECT pg_backend_pid(), pg_current_xact_id()::text`).Scan(&pid, &xid))

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
	named := fmt.Sprintf("pid %d (%s, idle in transaction", pid, app)
	require.Eventually(t, func() bool {
		f.clock.Advance(2 * time.Second)
		return strings.Contains(page(), named)
	}, 10*time.Second, 20*time.Millisecond, "the summary names %s", named)
	require.Contains(t, page(), `id="trouble-horizon-held"`)

	require.NoError(t, tx.Rollback())
	require.Eventually(t, func() bool {
		f.clock.Advance(2 * time.Second)
		return !strings.Contains(page(), named)
	}, 10*time.Second, 20*time.Millisecond, "no longer named once the transaction ended")
}
