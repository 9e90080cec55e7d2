package eventstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// The (stream, version) constraint, not the version check, is the last word
// on who wins: each engine's refusal of a duplicate is recognised as a lost
// race, and other failures are not.
func TestUniqueViolationIsRecognisedOnEveryEngine(t *testing.T) {
	t.Parallel()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := backend.Open(t)
			ctx := context.Background()
			s, err := Open(ctx, db.DB, NewRegistry())
			require.NoError(t, err)
			insert := func(typ any) error {
				_, err := db.ExecContext(ctx, s.q.insert, "s", 1, typ, "{}", 0)
				return err
			}
			require.NoError(t, insert("t"))
			duplicate := insert("t")
			require.Error(t, duplicate)
			require.True(t, isUniqueViolation(duplicate), "%v", duplicate)
			notNull := insert(nil)
			require.Error(t, notNull)
			require.False(t, isUniqueViolation(notNull), "%v", notNull)
		})
	}
}
