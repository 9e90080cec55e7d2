package sqldbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// PostgresEnv is the environment variable holding the PostgreSQL DSN tests
// use; when it is unset, PostgreSQL tests are skipped.
const PostgresEnv = "PASSAGE_TEST_POSTGRES"

// Backend opens a fresh database of one engine for a test.
type Backend struct {
	Name string
	// Open returns a new, empty database, closed by t.Cleanup. DSN is what
	// a second *sql.DB (another "process") would use to reach the same
	// database.
	Open func(t testing.TB) (db *sqldb.DB, dsn string)
}

// Backends lists SQLite, and PostgreSQL when PASSAGE_TEST_POSTGRES is set.
func Backends() []Backend {
	b := []Backend{{Name: "sqlite", Open: SQLite}}
	if os.Getenv(PostgresEnv) != "" {
		b = append(b, Backend{Name: "postgres", Open: Postgres})
	}
	return b
}

// SQLite opens a new SQLite database file in a temporary directory.
func SQLite(t testing.TB) (*sqldb.DB, string) {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "passage.db")
	return mustOpen(t, dsn), dsn
}

// Postgres opens the database named by PASSAGE_TEST_POSTGRES with a new
// schema of its own as search_path, dropped when the test ends, so tests run
// in parallel without seeing each other's tables. It skips the test when the
// variable is unset.
func Postgres(t testing.TB) (*sqldb.DB, string) {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(PostgresEnv + " is not set")
	}
	admin := mustOpen(t, base)
	schema := "test_" + randomHex(8)
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		_, _ = admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	dsn := u.String()
	return mustOpen(t, dsn), dsn
}

func mustOpen(t testing.TB, dsn string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
