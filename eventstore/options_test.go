package eventstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// An unusable option fails Open (or Update) with ErrInvalidArgument and
// an error that names the option.
func TestAnUnusableOptionIsNamed(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	for option, opt := range map[string]eventstore.Option{
		"WithClock":         eventstore.WithClock(nil),
		"WithPublisher":     eventstore.WithPublisher(nil),
		"WithInTransaction": eventstore.WithInTransaction(nil),
	} {
		_, err := eventstore.Open(ctx, db.DB, eventstore.NewRegistry(), opt)
		require.ErrorIs(t, err, eventstore.ErrInvalidArgument, option)
		require.ErrorContains(t, err, option+":")
	}
	s, err := eventstore.Open(ctx, db.DB, eventstore.NewRegistry())
	require.NoError(t, err)
	_, err = eventstore.Update(ctx, s, "s", 0, func(int, any) int { return 0 }, func(int) ([]any, error) { return nil, nil }, eventstore.WithRetries(-1))
	require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
	require.ErrorContains(t, err, "WithRetries(-1)")
}
