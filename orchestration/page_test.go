package orchestration

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// ReadPage sorts by state, start and latest event, page after page by
// offset, as folding and reading every history one by one says
// (bruteForce and ReadHistory, sorted here); ties, which the fake clock
// makes many of, go by ID.
func TestReadPageSortsAsTheHistoriesSay(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			w, ids := inspectionWorld(t, db.DB)
			// Later starts, so that the instants differ too.
			for i, id := range []string{"late-b", "late-a", "late-c"} {
				w.clock.Advance(time.Duration(i+1) * time.Minute)
				_, err := Start(ctx, w.e, "job", id, jobIn{End: "wait"})
				require.NoError(t, err)
				ids = append(ids, id)
			}
			slices.Sort(ids)
			want, _ := bruteForce(t, db, ids)
			first, last := map[string]time.Time{}, map[string]time.Time{}
			for _, id := range ids {
				h, err := ReadHistory(ctx, db, id)
				require.NoError(t, err)
				first[id], last[id] = h[0].RecordedAt, h[len(h)-1].RecordedAt
			}
			rank := map[State]int{Stuck: 0, Failed: 1, Running: 2, Cancelled: 3, Completed: 4}
			orders := map[PageSort]func(a, b string) int{
				"":   strings.Compare,
				ByID: strings.Compare,
				ByState: func(a, b string) int {
					return cmp.Or(cmp.Compare(rank[want[a].State], rank[want[b].State]), strings.Compare(a, b))
				},
				ByStarted: func(a, b string) int { return cmp.Or(instantOrder(first, b, a), strings.Compare(a, b)) },
				ByUpdated: func(a, b string) int { return cmp.Or(instantOrder(last, b, a), strings.Compare(a, b)) },
			}
			for sort, order := range orders {
				for _, state := range []State{"", Running, Completed} {
					for _, prefix := range []string{"", "job-1", "late"} {
						var wantIDs []string
						for _, id := range ids {
							if (state == "" || want[id].State == state) && strings.HasPrefix(id, prefix) {
								wantIDs = append(wantIDs, id)
							}
						}
						slices.SortFunc(wantIDs, order)
						const limit = 3
						for offset := 0; ; offset += limit {
							name := fmt.Sprintf("sort %q state %q prefix %q offset %d", sort, state, prefix, offset)
							page, more, err := ReadPage(ctx, db, PageQuery{Prefix: prefix, State: state, Sort: sort, Offset: offset, Limit: limit})
							require.NoError(t, err, name)
							var got []string
							for _, st := range page {
								require.Equal(t, want[st.Instance], st, name)
								got = append(got, st.Instance)
							}
							end := min(offset+limit, len(wantIDs))
							if offset >= len(wantIDs) {
								require.Empty(t, got, name)
								require.False(t, more, name)
								break
							}
							require.Equal(t, wantIDs[offset:end], got, name)
							require.Equal(t, end < len(wantIDs), more, name)
						}
					}
				}
			}
			for _, q := range []PageQuery{{Sort: "sideways", Limit: 1}, {Sort: ByState, After: "job", Limit: 1}, {Offset: -1, Limit: 1}} {
				_, _, err := ReadPage(ctx, db, q)
				require.Error(t, err, "%+v", q)
			}
		})
	}
}

// instantOrder compares the instants of a and b in at.
func instantOrder(at map[string]time.Time, a, b string) int { return at[a].Compare(at[b]) }
