package tick

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/passage-of-time/passage/internal/sqldb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// openDSN opens a second handle on a test database, closed with the test.
func openDSN(t *testing.T, dsn string) *sqlx.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db.DB
}

var discard = slog.New(slog.DiscardHandler)
