package sqldb_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

func TestPoolsAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "passage.db")
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.Equal(t, sqldb.DefaultSQLiteMaxConns, db.Stats().MaxOpenConnections)

	db2, err := sqldb.Open(ctx, path, sqldb.WithMaxConns(3))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db2.Close() })
	require.Equal(t, 3, db2.Stats().MaxOpenConnections)

	for _, n := range []int{0, -1, sqldb.MaxConnsLimit + 1} {
		_, err := sqldb.Open(ctx, path, sqldb.WithMaxConns(n))
		require.ErrorIs(t, err, sqldb.ErrBadOption)
		require.ErrorContains(t, err, fmt.Sprintf("WithMaxConns(%d)", n))
	}
}

func TestPostgresPoolMaxConnsInTheDSN(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://u@127.0.0.1:1/db?pool_max_conns=0":         "pool_max_conns=\"0\": must be a whole number between 1 and 1000",
		"postgres://u@127.0.0.1:1/db?pool_max_conns=x":         "pool_max_conns=\"x\"",
		"host=127.0.0.1 port=1 pool_max_conns=1001":            "pool_max_conns=\"1001\"",
		"postgres://u@127.0.0.1:1/db?pool_min_conns=2":         "pool_min_conns: not a parameter passage reads (pool_max_conns is)",
		"postgres://u:secret@127.0.0.1:1/db?pool_max_conns=-3": "pool_max_conns=\"-3\"",
	} {
		_, err := sqldb.Open(context.Background(), dsn)
		require.ErrorIs(t, err, sqldb.ErrBadDSN, dsn)
		require.ErrorContains(t, err, want, dsn)
		require.NotContains(t, err.Error(), "secret")
	}
}

// TestPostgresPoolStaysUnderItsBound asks a pool for 200 queries at once,
// each holding its connection a while: the server never sees more
// sessions of the pool than its bound — the DSN's pool_max_conns, or the
// default — and every query is answered.
func TestPostgresPoolStaysUnderItsBound(t *testing.T) {
	t.Parallel()
	base := os.Getenv(sqldbtest.PostgresEnv)
	if base == "" {
		t.Skip(sqldbtest.PostgresEnv + " is not set")
	}
	ctx := context.Background()
	admin, err := sqldb.Open(ctx, base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	for name, tc := range map[string]struct {
		query string
		bound int
	}{
		"default":        {"", sqldb.DefaultPostgresMaxConns},
		"pool_max_conns": {"pool_max_conns=4", 4},
	} {
		t.Run(name, func(t *testing.T) {
			app := fmt.Sprintf("passage_pool_test_%d_%s", os.Getpid(), name)
			u, err := url.Parse(base)
			require.NoError(t, err)
			q := u.Query()
			q.Set("application_name", app)
			if tc.query != "" {
				extra, err := url.ParseQuery(tc.query)
				require.NoError(t, err)
				for k, v := range extra {
					q[k] = v
				}
			}
			u.RawQuery = q.Encode()
			db, err := sqldb.Open(ctx, u.String())
			require.NoError(t, err)
			defer db.Close()
			require.Equal(t, tc.bound, db.Stats().MaxOpenConnections)

			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				most    int
				started = make(chan struct{}, 200)
			)
			for range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					started <- struct{}{}
					var sessions int
					// Each query counts the pool's sessions on the server
					// while it holds one of them.
					err := db.GetContext(ctx, &sessions, `SELECT COUNT(*) FROM pg_stat_activity, pg_sleep(0.005) WHERE application_name = $1`, app)
					require.NoError(t, err)
					mu.Lock()
					most = max(most, sessions)
					mu.Unlock()
				}()
			}
			wg.Wait()
			require.Len(t, started, 200)
			require.LessOrEqual(t, most, tc.bound, "sessions of the pool seen by the server")
			require.GreaterOrEqual(t, most, 2, "the queries did run side by side")
		})
	}
}
