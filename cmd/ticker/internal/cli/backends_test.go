package cli_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// databases returns the DSNs a test runs on: a SQLite file, and a fresh
// PostgreSQL schema when PASSAGE_TEST_POSTGRES is set.
func databases(t *testing.T) map[string]string {
	t.Helper()
	dbs := map[string]string{"sqlite": filepath.Join(t.TempDir(), "passage.db")}
	dsn := os.Getenv("PASSAGE_TEST_POSTGRES")
	if dsn == "" {
		return dbs
	}
	ctx := context.Background()
	admin, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	schema := fmt.Sprintf("sched_%d", time.Now().UnixNano())
	_, err = admin.ExecContext(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
		_ = admin.Close()
	})
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	dbs["postgres"] = u.String()
	return dbs
}
