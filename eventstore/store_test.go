package eventstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

func TestExpectedVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		existing int // events in the stream before the append
		expected eventstore.ExpectedVersion
		wantOK   bool
	}{
		{"any on a new stream", 0, eventstore.Any, true},
		{"any on an existing stream", 2, eventstore.Any, true},
		{"no stream on a new stream", 0, eventstore.NoStream, true},
		{"no stream on an existing stream", 2, eventstore.NoStream, false},
		{"stream exists on a new stream", 0, eventstore.StreamExists, false},
		{"stream exists on an existing stream", 2, eventstore.StreamExists, true},
		{"exact 0 on a new stream", 0, eventstore.Exact(0), true},
		{"exact 0 on an existing stream", 2, eventstore.Exact(0), false},
		{"exact current version", 2, eventstore.Exact(2), true},
		{"exact version behind", 2, eventstore.Exact(1), false},
		{"exact version ahead", 2, eventstore.Exact(3), false},
		{"exact version on a new stream", 0, eventstore.Exact(2), false},
	}
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		for _, tc := range cases {
			stream := "account-" + tc.name
			for i := range tc.existing {
				_, err := f.store.Append(f.ctx, stream, eventstore.Exact(int64(i)), Deposited{Amount: 1})
				require.NoError(t, err)
			}

			res, err := f.store.Append(f.ctx, stream, tc.expected, Deposited{Amount: 10}, Withdrawn{Amount: 3})

			version, verr := f.store.Version(f.ctx, stream)
			require.NoError(t, verr)
			if tc.wantOK {
				require.NoError(t, err, tc.name)
				require.Equal(t, int64(tc.existing+2), res.Version, tc.name)
				require.Equal(t, int64(tc.existing+2), version, tc.name)
				continue
			}
			require.ErrorIs(t, err, eventstore.ErrWrongExpectedVersion, tc.name)
			var conflict *eventstore.VersionConflictError
			require.ErrorAs(t, err, &conflict, tc.name)
			require.Equal(t, eventstore.VersionConflictError{Stream: stream, Expected: tc.expected, Actual: int64(tc.existing)}, *conflict, tc.name)
			var c interface{ Conflict() bool }
			require.ErrorAs(t, err, &c, "recognisable without importing eventstore")
			require.True(t, c.Conflict())
			require.ErrorContains(t, err, stream)
			require.Equal(t, int64(tc.existing), version, "%s: a conflict stores nothing", tc.name)
		}
	})
}

func TestExpectedVersionString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "any", eventstore.Any.String())
	require.Equal(t, "no stream", eventstore.NoStream.String())
	require.Equal(t, "no stream", eventstore.Exact(0).String(), "a stream at version 0 has no events")
	require.Equal(t, "stream exists", eventstore.StreamExists.String())
	require.Equal(t, "version 7", eventstore.Exact(7).String())
	err := &eventstore.VersionConflictError{Stream: "order-1", Expected: eventstore.Exact(1), Actual: 3}
	require.EqualError(t, err, `eventstore: stream "order-1": expected version 1, but it is at version 3`)
	err = &eventstore.VersionConflictError{Stream: "order-1", Expected: eventstore.StreamExists}
	require.EqualError(t, err, `eventstore: stream "order-1": expected stream exists, but it has no events`)
}

func TestAppendAndLoad(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		first, err := f.store.Append(f.ctx, "account-1", eventstore.NoStream, Opened{Owner: "Ada"}, &Deposited{Amount: 100})
		require.NoError(t, err)
		f.clock.Advance(time.Minute)
		second, err := f.store.Append(f.ctx, "account-1", eventstore.Exact(2), Withdrawn{Amount: 30})
		require.NoError(t, err)
		_, err = f.store.Append(f.ctx, "account-2", eventstore.NoStream, Opened{Owner: "Bob"})
		require.NoError(t, err)

		loaded, err := f.store.Load(f.ctx, "account-1", 0)
		require.NoError(t, err)
		require.Equal(t, append(first.Recorded, second.Recorded...), loaded, "Load returns what Append recorded")
		require.Equal(t, []any{Opened{Owner: "Ada"}, Deposited{Amount: 100}, Withdrawn{Amount: 30}}, events(loaded),
			"a *Deposited is stored and read back as Deposited")
		for i, r := range loaded {
			require.Equal(t, "account-1", r.Stream)
			require.Equal(t, int64(i+1), r.Version)
			if i > 0 {
				require.Greater(t, r.Position, loaded[i-1].Position)
			}
		}
		require.Equal(t, []string{"account.opened", "account.deposited", "account.withdrawn"},
			[]string{loaded[0].Type, loaded[1].Type, loaded[2].Type})
		require.Equal(t, epoch, loaded[0].RecordedAt, "stamped by the injected clock")
		require.Equal(t, epoch.Add(time.Minute), loaded[2].RecordedAt)

		tail, err := f.store.Load(f.ctx, "account-1", 2)
		require.NoError(t, err)
		require.Equal(t, loaded[1:], tail, "Load from a version")

		none, err := f.store.Load(f.ctx, "account-404", 0)
		require.NoError(t, err)
		require.Empty(t, none, "a stream without events is empty, not an error")
		v, err := f.store.Version(f.ctx, "account-404")
		require.NoError(t, err)
		require.Zero(t, v)

		checked, err := f.store.Append(f.ctx, "account-1", eventstore.Exact(3))
		require.NoError(t, err, "no events: only the expected version is checked")
		require.Equal(t, eventstore.AppendResult{Version: 3}, checked)
		_, err = f.store.Append(f.ctx, "account-1", eventstore.NoStream)
		require.ErrorIs(t, err, eventstore.ErrWrongExpectedVersion)

		require.Equal(t, []any{Opened{Owner: "Ada"}, Deposited{Amount: 100}, Withdrawn{Amount: 30}, Opened{Owner: "Bob"}},
			f.pub.published(), "every committed event published, in order")
	})
}

func TestBadInputIsRejected(t *testing.T) {
	t.Parallel()
	f := setup(t, sqldbtest.Backends()[0])
	type Unregistered struct{}
	for name, call := range map[string]func() error{
		"empty stream": func() error {
			_, err := f.store.Append(f.ctx, "", eventstore.Any, Opened{})
			return err
		},
		"negative exact version": func() error {
			_, err := f.store.Append(f.ctx, "s", eventstore.Exact(-1), Opened{})
			return err
		},
		"made-up expected version": func() error {
			_, err := f.store.Append(f.ctx, "s", eventstore.ExpectedVersion(-9), Opened{})
			return err
		},
		"nil event": func() error {
			_, err := f.store.Append(f.ctx, "s", eventstore.Any, Opened{}, nil)
			return err
		},
		"nil pointer event": func() error {
			_, err := f.store.Append(f.ctx, "s", eventstore.Any, (*Opened)(nil))
			return err
		},
		"load from negative version": func() error {
			_, err := f.store.Load(f.ctx, "s", -1)
			return err
		},
		"load empty stream name": func() error {
			_, err := f.store.Load(f.ctx, "", 0)
			return err
		},
		"nil transaction": func() error {
			_, err := f.store.AppendTx(f.ctx, nil, "s", eventstore.Any, Opened{})
			return err
		},
	} {
		require.ErrorIs(t, call(), eventstore.ErrInvalidArgument, name)
	}

	_, err := f.store.Append(f.ctx, "s", eventstore.Any, Opened{}, Unregistered{})
	require.ErrorIs(t, err, eventstore.ErrUnregisteredType)
	require.ErrorContains(t, err, "Unregistered", "the error names the Go type")
	require.ErrorContains(t, err, "event 1", "and which event it was")

	v, err := f.store.Version(f.ctx, "s")
	require.NoError(t, err)
	require.Zero(t, v, "a rejected batch stores none of its events")
}

func TestOpenValidatesItsArguments(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	registry := newRegistry(t)
	_, err := eventstore.Open(ctx, nil, registry)
	require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
	_, err = eventstore.Open(ctx, db.DB, nil)
	require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
	for _, opt := range []eventstore.Option{
		eventstore.WithClock(nil), eventstore.WithPublisher(nil), eventstore.WithInTransaction(nil),
	} {
		_, err = eventstore.Open(ctx, db.DB, registry, opt)
		require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
	}

	_, err = eventstore.Open(ctx, db.DB, registry)
	require.NoError(t, err)
	_, err = eventstore.Open(ctx, db.DB, registry)
	require.NoError(t, err, "opening again on an existing schema is harmless")
}

func TestAppendTxRejectsAnotherDatabase(t *testing.T) {
	t.Parallel()
	f := setup(t, sqldbtest.Backends()[0])
	pg, _ := sqldbtest.Postgres(t) // skips without PASSAGE_TEST_POSTGRES
	tx, err := pg.BeginTxx(f.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = f.store.AppendTx(f.ctx, tx, "s", eventstore.Any, Opened{})
	require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
	require.ErrorContains(t, err, "transaction is on postgres, the store on sqlite")
}
