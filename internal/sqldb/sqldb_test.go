package sqldb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

func TestOpenRejectsBadDSN(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"", "   ", "mysql://root@localhost/db", "postgres://user@host:notaport/db"} {
		_, err := sqldb.Open(context.Background(), dsn)
		require.ErrorIs(t, err, sqldb.ErrBadDSN, "dsn %q", dsn)
	}
}

func TestOpenUnreachablePostgresNamesTheServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Port 1 is reserved and never serves PostgreSQL.
	_, err := sqldb.Open(ctx, "postgres://postgres:secret@127.0.0.1:1/test?connect_timeout=2")
	require.Error(t, err)
	require.Contains(t, err.Error(), "127.0.0.1:1")
	require.NotContains(t, err.Error(), "secret", "passwords never appear in errors")
}

func TestTimeEncodingRoundTripsAndSorts(t *testing.T) {
	t.Parallel()
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	a := time.Date(2026, 3, 29, 1, 59, 59, 999999999, warsaw)
	b := a.Add(time.Nanosecond)
	require.True(t, sqldb.DecodeTime(sqldb.EncodeTime(a)).Equal(a))
	require.Less(t, sqldb.EncodeTime(a), sqldb.EncodeTime(b))
	require.Equal(t, time.UTC, sqldb.DecodeTime(sqldb.EncodeTime(a)).Location())
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	migrations := []sqldb.Migration{
		{Version: 1, SQLite: `CREATE TABLE widgets (id TEXT PRIMARY KEY)`},
		{Version: 2, SQLite: `ALTER TABLE widgets ADD COLUMN size INTEGER NOT NULL DEFAULT 0`},
	}
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := backend.Open(t)
			ctx := context.Background()

			// Several processes starting at once all succeed and apply
			// each step once.
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Go(func() {
					other, err := sqldb.Open(ctx, dsn)
					if err != nil {
						errs[i] = err
						return
					}
					defer other.Close()
					errs[i] = sqldb.Migrate(ctx, other.DB, "widgets", migrations)
				})
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, sqldb.Migrate(ctx, db.DB, "widgets", migrations), "re-running is harmless")

			_, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO widgets (id, size) VALUES (?, ?)`), "a", 3)
			require.NoError(t, err)
			var applied int
			require.NoError(t, db.GetContext(ctx, &applied, `SELECT COUNT(*) FROM passage_migrations WHERE component = 'widgets'`))
			require.Equal(t, 2, applied)
		})
	}
}

func TestMigrateReportsTheFailingStep(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	err := sqldb.Migrate(context.Background(), db.DB, "broken", []sqldb.Migration{{Version: 1, SQLite: `CREATE TABLE (`}})
	require.ErrorContains(t, err, "migrate broken to version 1")
}

func TestCheckTimeRefusesWhatEncodeTimeWouldWrap(t *testing.T) {
	t.Parallel()
	require.NoError(t, sqldb.CheckTime(sqldb.MaxTime))
	require.NoError(t, sqldb.CheckTime(sqldb.MinTime))
	require.NoError(t, sqldb.CheckTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	late := sqldb.MaxTime.Add(time.Nanosecond)
	require.Less(t, sqldb.EncodeTime(late), int64(0), "this is what CheckTime guards against")
	require.ErrorIs(t, sqldb.CheckTime(late), sqldb.ErrTimeOutOfRange)
	require.ErrorIs(t, sqldb.CheckTime(time.Time{}), sqldb.ErrTimeOutOfRange)
}
