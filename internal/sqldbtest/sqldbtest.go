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
// schema of its own as search_path (see [PostgresDSN]), so tests run in
// parallel without seeing each other's tables. The pool is closed, then
// the schema dropped, when the test ends. It skips the test when the
// variable is unset.
func Postgres(t testing.TB) (*sqldb.DB, string) {
	t.Helper()
	dsn := PostgresDSN(t)
	return mustOpen(t, dsn), dsn
}

// PostgresDSN creates a schema of the test's own in the database named by
// PASSAGE_TEST_POSTGRES and returns a DSN whose search_path is that
// schema. The schema is dropped when the test ends, after the cleanups
// registered later (the pools a test opens on the DSN are closed first),
// and a drop that fails fails the test: the schema would stay on the
// shared server for good. It skips the test when the variable is unset.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(PostgresEnv + " is not set")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	ctx := context.Background()
	admin, err := sqldb.Open(ctx, base)
	if err != nil {
		t.Fatalf("open %s: %v", sqldb.Redact(base), err)
	}
	// One connection, held from the CREATE to the DROP: a pool closes a
	// connection idle for five minutes, and a longer test would then need
	// a new one to drop its schema, which a server at max_connections
	// refuses.
	conn, err := admin.Conn(ctx)
	if err != nil {
		_ = admin.Close()
		t.Fatalf("connect to %s: %v", sqldb.Redact(base), err)
	}
	schema := "test_" + randomHex(8)
	if _, err := conn.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = conn.Close()
		_ = admin.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		_, err := conn.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = conn.Close()
		_ = admin.Close()
		if err != nil {
			t.Errorf("drop schema %s: %v (it stays on the PostgreSQL server)", schema, err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
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
