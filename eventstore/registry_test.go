package eventstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

func TestRegisterRejectsAmbiguity(t *testing.T) {
	t.Parallel()
	r := eventstore.NewRegistry()
	require.NoError(t, eventstore.Register[Opened](r, "account.opened"))

	for name, err := range map[string]error{
		"name taken":     eventstore.Register[Deposited](r, "account.opened"),
		"type taken":     eventstore.Register[Opened](r, "account.opened.v2"),
		"empty name":     eventstore.Register[Deposited](r, ""),
		"padded name":    eventstore.Register[Deposited](r, " account.deposited"),
		"pointer type":   eventstore.Register[*Deposited](r, "account.deposited"),
		"interface type": eventstore.Register[fmt.Stringer](r, "stringer"),
		"nil registry":   eventstore.Register[Deposited](nil, "account.deposited"),
	} {
		require.ErrorIs(t, err, eventstore.ErrInvalidRegistration, name)
	}
	err := eventstore.Register[Deposited](r, "account.opened")
	require.ErrorContains(t, err, `name "account.opened" is already registered for eventstore_test.Opened`)
}

// Version 2 of the account's opening event gained a field. Events written
// with version 1 are still read, the new field zero.
type OpenedV2 struct {
	Owner    string
	Currency string
}

func TestOldEventsStayReadableWhenTypesGainFields(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		_, err := f.store.Append(f.ctx, "account-1", eventstore.NoStream, Opened{Owner: "Ada"})
		require.NoError(t, err)

		// The next release of the program registers the evolved type
		// under the same name.
		evolved := eventstore.NewRegistry()
		require.NoError(t, eventstore.Register[OpenedV2](evolved, "account.opened"))
		next, err := eventstore.Open(f.ctx, f.db.DB, evolved)
		require.NoError(t, err)
		_, err = next.Append(f.ctx, "account-1", eventstore.Exact(1), OpenedV2{Owner: "Bob", Currency: "EUR"})
		require.NoError(t, err)

		loaded, err := next.Load(f.ctx, "account-1", 0)
		require.NoError(t, err)
		require.Equal(t, []any{OpenedV2{Owner: "Ada"}, OpenedV2{Owner: "Bob", Currency: "EUR"}}, events(loaded))

		// And the old release, reading the new event, ignores the field
		// it does not know.
		loaded, err = f.store.Load(f.ctx, "account-1", 0)
		require.NoError(t, err)
		require.Equal(t, []any{Opened{Owner: "Ada"}, Opened{Owner: "Bob"}}, events(loaded))
	})
}

func TestUnknownEventTypeIsAnError(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		_, err := f.store.Append(f.ctx, "account-1", eventstore.NoStream, Opened{Owner: "Ada"}, Deposited{Amount: 1})
		require.NoError(t, err)

		partial := eventstore.NewRegistry()
		require.NoError(t, eventstore.Register[Opened](partial, "account.opened"))
		reader, err := eventstore.Open(f.ctx, f.db.DB, partial)
		require.NoError(t, err)

		_, err = reader.Load(f.ctx, "account-1", 0)
		require.ErrorIs(t, err, eventstore.ErrUnknownEventType)
		require.ErrorContains(t, err, `"account.deposited"`, "the error names the type")
		require.ErrorContains(t, err, `stream "account-1": version 2`, "and where it is")

		_, _, err = eventstore.Get(f.ctx, reader, "account-1", 0, balance)
		require.ErrorIs(t, err, eventstore.ErrUnknownEventType)
	})
}
