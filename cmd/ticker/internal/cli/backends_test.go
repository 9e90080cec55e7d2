package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// databases returns the DSNs a test runs on: a SQLite file, and a fresh
// PostgreSQL schema when PASSAGE_TEST_POSTGRES is set, dropped when the
// test ends (sqldbtest.PostgresDSN: a drop that fails fails the test).
func databases(t *testing.T) map[string]string {
	t.Helper()
	dbs := map[string]string{"sqlite": filepath.Join(t.TempDir(), "passage.db")}
	if os.Getenv(sqldbtest.PostgresEnv) != "" {
		dbs["postgres"] = sqldbtest.PostgresDSN(t)
	}
	return dbs
}
