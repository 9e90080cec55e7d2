package orchestration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// Inspection tells the instances on each side of a patch apart from their
// histories alone: the markers of those that took the new branch, the
// notes of those on the old one, and neither for the rest.
func TestInspectionListsTheInstancesOnEachSideOfAPatch(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := newDeploys(t, b)
			d.untilDeprecation()
			ids := func(q InstanceQuery) []string {
				t.Helper()
				q.Limit = MaxInstancesRead
				statuses, more, err := ReadInstances(ctx, d.db, q)
				require.NoError(t, err)
				require.False(t, more)
				out := []string{}
				for _, st := range statuses {
					out = append(out, st.Instance)
				}
				return out
			}
			require.Equal(t, []string{"marked"}, ids(InstanceQuery{Patch: "courier", State: Running}))
			require.Equal(t, []string{"fresh", "passed", "unwoken"}, ids(InstanceQuery{WithoutPatch: "courier", State: Running}))
			require.Equal(t, []string{"fresh", "marked", "passed", "unwoken"}, ids(InstanceQuery{WithoutPatch: "another"}))
			require.Empty(t, ids(InstanceQuery{Patch: "another"}))

			sides := map[string][2][]string{}
			statuses, _, err := ReadInstances(ctx, d.db, InstanceQuery{Limit: 10})
			require.NoError(t, err)
			for _, st := range statuses {
				sides[st.Instance] = [2][]string{st.Patches, st.OldBranches}
			}
			require.Equal(t, map[string][2][]string{
				"marked":  {{"courier"}, nil},
				"passed":  {nil, {"courier"}},
				"unwoken": {nil, nil}, // on the old branch, but its history cannot say so yet
				"fresh":   {nil, nil},
			}, sides)

			// Deprecated too early: passed is stuck, the others end.
			deprecated := d.world(shipDeprecated)
			deprecated.runUntilQuiet(t0.Add(30 * 24 * time.Hour))
			require.Empty(t, ids(InstanceQuery{State: Running}))
			require.Equal(t, []string{"marked"}, ids(InstanceQuery{Patch: "courier", State: Completed}))
			require.Equal(t, []string{"passed"}, ids(InstanceQuery{WithoutPatch: "courier", State: Stuck}))
			st, err := deprecated.e.Status(ctx, "passed")
			require.NoError(t, err)
			require.Equal(t, []string{"courier"}, st.OldBranches, "Status folds the same history")
			require.False(t, st.HasPatch("courier"))
		})
	}
}
