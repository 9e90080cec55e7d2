package natsjs

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// eachDriver runs body against every database's driver, on a fresh
// database with the inbox's schema.
func eachDriver(t *testing.T, body func(t *testing.T, db *sqlx.DB, dsn string, d driver)) {
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.Open(t)
			require.NoError(t, sqldb.Migrate(context.Background(), db.DB, component, migrations))
			body(t, db.DB, dsn, newDriver(db.DB))
		})
	}
}

func TestDriverRecordsAMessageOncePerConsumer(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, db *sqlx.DB, _ string, d driver) {
		ctx := context.Background()
		record := func(consumer, id string) bool {
			tx, err := db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			fresh, err := d.record(ctx, tx, consumer, id, 1)
			require.NoError(t, err)
			require.NoError(t, tx.Commit())
			return fresh
		}
		require.True(t, record("orders", "minute/2026-11-26T12:01:00Z"))
		require.False(t, record("orders", "minute/2026-11-26T12:01:00Z"), "the same message again")
		require.True(t, record("billing", "minute/2026-11-26T12:01:00Z"), "another consumer")
		require.True(t, record("orders", "minute/2026-11-26T12:02:00Z"), "another message")

		for _, c := range []struct {
			consumer, id string
			want         bool
		}{
			{"orders", "minute/2026-11-26T12:01:00Z", true},
			{"billing", "minute/2026-11-26T12:01:00Z", true},
			{"billing", "minute/2026-11-26T12:02:00Z", false},
			{"shipping", "minute/2026-11-26T12:01:00Z", false},
		} {
			got, err := d.handled(ctx, db, c.consumer, c.id)
			require.NoError(t, err)
			require.Equal(t, c.want, got, "%s %s", c.consumer, c.id)
		}
	})
}

func TestDriverForgetsWhatARolledBackTransactionRecorded(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, db *sqlx.DB, _ string, d driver) {
		ctx := context.Background()
		tx, err := db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		fresh, err := d.record(ctx, tx, "orders", "m1", 1)
		require.NoError(t, err)
		require.True(t, fresh)
		require.NoError(t, tx.Rollback())
		got, err := d.handled(ctx, db, "orders", "m1")
		require.NoError(t, err)
		require.False(t, got)
	})
}

// Two transactions recording one message at once: the second waits for
// the first and finds the message handled once it commits.
func TestDriverRecordWaitsForAConcurrentRecord(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, db *sqlx.DB, dsn string, d driver) {
		ctx := context.Background()
		other, err := sqldb.Open(ctx, dsn) // another process
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })

		first, err := db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		fresh, err := d.record(ctx, first, "orders", "m1", 1)
		require.NoError(t, err)
		require.True(t, fresh)

		type result struct {
			fresh bool
			err   error
		}
		second := make(chan result, 1)
		go func() {
			tx, err := other.BeginTxx(ctx, nil)
			if err != nil {
				second <- result{err: err}
				return
			}
			defer func() { _ = tx.Rollback() }()
			fresh, err := d.record(ctx, tx, "orders", "m1", 2)
			if err == nil {
				err = tx.Commit()
			}
			second <- result{fresh, err}
		}()
		select {
		case r := <-second:
			t.Fatalf("the second record did not wait for the first transaction: %+v", r)
		case <-time.After(100 * time.Millisecond):
		}
		require.NoError(t, first.Commit())
		r := <-second
		require.NoError(t, r.err)
		require.False(t, r.fresh, "recorded by the first transaction")
	})
}

func TestDriverForgetsRowsHandledBefore(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, db *sqlx.DB, _ string, d driver) {
		ctx := context.Background()
		tx, err := db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		for i, at := range []int64{10, 20, 30} {
			_, err := d.record(ctx, tx, "orders", string(rune('a'+i)), at)
			require.NoError(t, err)
		}
		_, err = d.record(ctx, tx, "billing", "a", 10)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())

		n, err := d.forget(ctx, db, "orders", 30)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		for id, want := range map[string]bool{"a": false, "b": false, "c": true} {
			got, err := d.handled(ctx, db, "orders", id)
			require.NoError(t, err)
			require.Equal(t, want, got, id)
		}
		got, err := d.handled(ctx, db, "billing", "a")
		require.NoError(t, err)
		require.True(t, got, "another consumer's rows stay")
	})
}
