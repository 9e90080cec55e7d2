package eventstore

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestDriverConformance holds every database's driver to the contract of
// the driver interface, with one test body: versions, inserts refused at
// a version taken, loads in order, and turns.
func TestDriverConformance(t *testing.T) {
	t.Parallel()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := backend.Open(t)
			ctx := context.Background()
			s, err := Open(ctx, db.DB, NewRegistry())
			require.NoError(t, err)
			d := s.driver
			require.Equal(t, newDriver(db.DB), d, "the driver is picked from the database")

			t.Run("insert and version", func(t *testing.T) {
				v, err := d.version(ctx, db, "a")
				require.NoError(t, err)
				require.Zero(t, v, "a stream without events is at 0")
				var positions []int64
				inTx(t, db, func(tx *sqlx.Tx) {
					for version := int64(1); version <= 3; version++ {
						p, err := d.insert(ctx, tx, eventRow{"a", version, "t", `{"n":1}`}, 7)
						require.NoError(t, err)
						positions = append(positions, p)
					}
					v, err := d.version(ctx, tx, "a")
					require.NoError(t, err)
					require.EqualValues(t, 3, v)
				})
				require.IsIncreasing(t, positions)
			})

			// The (stream, version) constraint, not the version check, is
			// the last word on who wins: each engine's refusal of a
			// duplicate is recognised as a lost race, and other failures
			// are not.
			t.Run("a stale version is refused", func(t *testing.T) {
				insert := func(typ string) error {
					tx, err := db.BeginTxx(ctx, nil)
					require.NoError(t, err)
					defer func() { _ = tx.Rollback() }()
					if _, err := d.insert(ctx, tx, eventRow{"b", 1, typ, "{}"}, 0); err != nil {
						return err
					}
					return tx.Commit()
				}
				require.NoError(t, insert("t"))
				duplicate := insert("t")
				require.Error(t, duplicate)
				require.True(t, d.isUniqueViolation(duplicate), "%v", duplicate)
				_, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO eventstore_events (stream, version, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)`), "b", 2, nil, "{}", 0)
				require.Error(t, err)
				require.False(t, d.isUniqueViolation(err), "%v", err)
				v, err := d.version(ctx, db, "b")
				require.NoError(t, err)
				require.EqualValues(t, 1, v, "the refused insert stored nothing")

				// Through the store: an append expecting a stale version
				// conflicts and stores nothing.
				_, err = s.append(ctx, mustBegin(t, db), "b", Exact(0), nil)
				require.ErrorIs(t, err, ErrWrongExpectedVersion)
			})

			t.Run("load in order", func(t *testing.T) {
				inTx(t, db, func(tx *sqlx.Tx) {
					// Versions inserted out of order come back in order.
					rows, err := d.insertMany(ctx, tx, []eventRow{{"c", 2, "t", `{"v":2}`}, {"d", 1, "t", `{"v":1}`}, {"c", 1, "t", `{"v":1}`}}, 9)
					require.NoError(t, err)
					got := map[string]int64{}
					for rows.Next() {
						var stream string
						var version, position int64
						require.NoError(t, rows.Scan(&stream, &version, &position))
						got[stream+string(rune('0'+version))] = position
					}
					require.NoError(t, rows.Err())
					require.Len(t, got, 3)
					versions, err := d.versions(ctx, tx, []string{"c", "d", "none"})
					require.NoError(t, err)
					require.Equal(t, map[string]int64{"c": 2, "d": 1, "none": 0}, versions)
				})
				require.Equal(t, []int64{1, 2}, loadVersions(t, func() (*sqlx.Rows, error) { return d.load(ctx, db, "c", 0) }))
				require.Equal(t, []int64{2}, loadVersions(t, func() (*sqlx.Rows, error) { return d.load(ctx, db, "c", 2) }))
				require.Equal(t, []int64{1, 2, 3}, loadVersions(t, func() (*sqlx.Rows, error) { return d.load(ctx, db, "a", 1) }))
				rows, err := d.loadMany(ctx, db, []string{"d", "c", "none"})
				require.NoError(t, err)
				var order []string
				for rows.Next() {
					var stream, typ string
					var position, version, at int64
					var data []byte
					require.NoError(t, rows.Scan(&stream, &position, &version, &typ, &data, &at))
					require.JSONEq(t, `{"v":`+string(rune('0'+version))+`}`, string(data))
					require.EqualValues(t, 9, at)
					order = append(order, stream+string(rune('0'+version)))
				}
				require.NoError(t, rows.Err())
				require.Equal(t, []string{"c1", "c2", "d1"}, order, "(stream, version) order")
				require.LessOrEqual(t, d.insertChunk()*5, 32766, "a chunk's parameters fit every database")
			})

			t.Run("turns", func(t *testing.T) {
				other, err := sqldb.Open(ctx, dsn) // a second process
				require.NoError(t, err)
				t.Cleanup(func() { _ = other.Close() })
				tx := mustBegin(t, db)
				require.NoError(t, d.takeTurn(ctx, tx, "e"))
				require.NoError(t, d.takeTurns(ctx, tx, []string{"f", "e", "f"}))
				busy, err := d.tryTurns(ctx, tx, []string{"e", "f", "g"})
				require.NoError(t, err)
				require.Empty(t, busy, "turns a transaction holds are its own")
				if _, oneWriter := d.(sqliteDriver); oneWriter {
					// SQLite's immediate transaction holds the only write
					// lock: no other transaction can hold a turn meanwhile.
					require.NoError(t, tx.Rollback())
					return
				}
				tx2 := mustBegin(t, other)
				busy, err = d.tryTurns(ctx, tx2, []string{"e", "h", "e", "f"})
				require.NoError(t, err)
				require.ElementsMatch(t, []string{"e", "f"}, busy, "another transaction's turns are busy, each named once")
				busy, err = d.tryTurns(ctx, tx, []string{"h"})
				require.NoError(t, err)
				require.Equal(t, []string{"h"}, busy, "tx2 took h")
				require.NoError(t, tx.Rollback())
				busy, err = d.tryTurns(ctx, tx2, []string{"e", "f"})
				require.NoError(t, err)
				require.Empty(t, busy, "turns are let go when their transaction ends")
				require.NoError(t, tx2.Rollback())
			})
		})
	}
}

func mustBegin(t *testing.T, db *sqldb.DB) *sqlx.Tx {
	t.Helper()
	tx, err := db.BeginTxx(context.Background(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	return tx
}

func inTx(t *testing.T, db *sqldb.DB, f func(tx *sqlx.Tx)) {
	t.Helper()
	tx := mustBegin(t, db)
	f(tx)
	require.NoError(t, tx.Commit())
}

func loadVersions(t *testing.T, load func() (*sqlx.Rows, error)) []int64 {
	t.Helper()
	rows, err := load()
	require.NoError(t, err)
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var position, version, at int64
		var typ string
		var data []byte
		require.NoError(t, rows.Scan(&position, &version, &typ, &data, &at))
		out = append(out, version)
	}
	require.NoError(t, rows.Err())
	return out
}
