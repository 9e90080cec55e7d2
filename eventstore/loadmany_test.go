package eventstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// LoadMany returns for each stream exactly what Load returns for it.
func TestLoadManyIsLoadForEachStream(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		var names []string
		for i := range 30 {
			name := fmt.Sprint("account-", i)
			names = append(names, name)
			events := []any{Opened{Owner: name}}
			for j := range i % 4 {
				events = append(events, Deposited{Amount: j + 1})
			}
			_, err := f.store.Append(f.ctx, name, eventstore.NoStream, events...)
			require.NoError(t, err)
		}
		asked := append([]string{"never-written", names[3]}, names...) // unknown and repeated names
		got, err := f.store.LoadMany(f.ctx, asked)
		require.NoError(t, err)
		require.Len(t, got, len(names), "one entry per stream with events")
		for _, name := range names {
			want, err := f.store.Load(f.ctx, name, 0)
			require.NoError(t, err)
			require.Equal(t, want, got[name], name)
		}
		_, err = f.store.LoadMany(f.ctx, []string{"a", ""})
		require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
		require.ErrorContains(t, err, "stream 1 has an empty name")
		empty, err := f.store.LoadMany(f.ctx, nil)
		require.NoError(t, err)
		require.Empty(t, empty)
	})
}
