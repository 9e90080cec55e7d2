package orchestration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// ReadPage returns, page after page, the instances of a state and an ID
// prefix that folding every history says (bruteForce), by ID, each once.
func TestReadPageKeepsAStateAndAPrefixInOneStatement(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			_, ids := inspectionWorld(t, db.DB)
			store, err := eventstore.Open(ctx, db.DB, decoder)
			require.NoError(t, err)
			for _, stream := range []string{"workflow", "workflow0", "workflows/x", "orders/1"} {
				_, err = store.Append(ctx, stream, eventstore.NoStream, cancelRequested{})
				require.NoError(t, err)
			}
			want, _ := bruteForce(t, db, ids)
			prefixes := []string{""}
			for _, id := range ids {
				prefixes = append(prefixes, id[:1], id[:len(id)/2])
			}
			prefixes = append(prefixes, strings.ToUpper(ids[0][:1]), "%", "zzz")
			for _, state := range []State{"", Running, Completed, Failed, Cancelled, Stuck} {
				for _, prefix := range prefixes {
					var wantIDs, gotIDs []string
					for _, id := range ids {
						if (state == "" || want[id].State == state) && strings.HasPrefix(id, prefix) {
							wantIDs = append(wantIDs, id)
						}
					}
					after := ""
					for {
						page, more, err := ReadPage(ctx, db, PageQuery{Prefix: prefix, State: state, After: after, Limit: 3})
						require.NoError(t, err)
						for _, st := range page {
							require.Equal(t, want[st.Instance], st)
							gotIDs = append(gotIDs, st.Instance)
						}
						if !more {
							break
						}
						require.Len(t, page, 3)
						after = page[len(page)-1].Instance
					}
					require.Equal(t, wantIDs, gotIDs, "state %q prefix %q", state, prefix)
				}
			}
			_, _, err = ReadPage(ctx, db, PageQuery{State: "sleepy", Limit: 1})
			require.ErrorContains(t, err, "sleepy")
		})
	}
}
