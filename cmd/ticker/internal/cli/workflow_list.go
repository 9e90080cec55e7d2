package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/orchestration"
)

var workflowStates = []orchestration.State{orchestration.Running, orchestration.Completed, orchestration.Failed, orchestration.Cancelled, orchestration.Stuck}

func workflowListCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "list [--db passage.db] [--state running|completed|failed|cancelled|stuck] [--patch ID] [--without-patch ID] [--tz UTC] [--json]",
		Short: "list the workflow instances: workflow, state, started, waiting until, error",
		Long: "Lists the workflow instances: workflow, state, started, waiting until, error.\n\n" +
			"--patch ID keeps the instances whose histories hold the marker of orchestration.Patched(ctx, ID): " +
			"they took its new branch. --without-patch ID keeps the others: on its old branch, or not at its point yet. " +
			"Either adds a PATCH column: new (the marker), old (noted on the old branch once it woke past the point) " +
			"or - (neither: not at the point yet, or past it since before the patch and asleep since). " +
			"Replace Patched with DeprecatePatch once --without-patch ID --state running lists no instance started " +
			"before the patch was deployed; remove DeprecatePatch once --patch ID --state running lists none.",
		Args: noArgs,
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN of the orchestration engine, opened read-only: list never creates, migrates or locks it")
	state := c.Flags().String("state", "", "list only the instances in this state: running, completed, failed, cancelled or stuck (default all)")
	patch := c.Flags().String("patch", "", "list only the instances whose history holds the marker of this patch: those that took its new branch")
	without := c.Flags().String("without-patch", "", "list only the instances whose history lacks the marker of this patch: on its old branch, or not at its point yet")
	tz := addTZ(c, "IANA time zone to show the times in")
	asJSON := addJSON(c, "print a JSON array instead of a table")
	c.RunE = func(c *cobra.Command, _ []string) error {
		loc, err := tz.location()
		if err != nil {
			return err
		}
		if *state != "" && !slices.Contains(workflowStates, orchestration.State(*state)) {
			return usagef("--state %q: not running, completed, failed, cancelled or stuck", *state)
		}
		for _, f := range []string{"patch", "without-patch"} {
			if c.Flags().Changed(f) && c.Flags().Lookup(f).Value.String() == "" {
				return usagef("--%s: give a patch ID", f)
			}
		}
		if *patch != "" && *patch == *without {
			return usagef("--patch and --without-patch both name %q: no instance is on both sides of a patch", *patch)
		}
		db, err := dbf.database()
		if err != nil {
			return err
		}
		query := orchestration.InstanceQuery{State: orchestration.State(*state), Patch: *patch, WithoutPatch: *without}
		return listWorkflows(c.Context(), env, db, query, loc, *asJSON)
	}
	return c
}

// listedPatches is a line of "workflow list" with the patches the
// instance took the new branch of, and those it is noted on the old
// branch of.
type listedPatches struct {
	listedWorkflow
	Patches     []string `json:"patches"`
	OldBranches []string `json:"old_branches"`
}

// listWorkflows prints the instances of db that query matches (its
// State, Patch and WithoutPatch), by start time, times in loc.
func listWorkflows(ctx context.Context, env Env, db database, query orchestration.InstanceQuery, loc *time.Location, asJSON bool) error {
	q, done, err := openWorkflows(ctx, db)
	if err != nil {
		return err
	}
	defer done()
	all, err := readInstances(ctx, q)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return fmt.Errorf("--db %s: %w", db, errNoInstances)
	}
	list := []listedPatches{} // [] rather than null in JSON
	for _, s := range all {
		if query.Matches(s) {
			list = append(list, listedPatches{listed(s, loc), nonNil(s.Patches), nonNil(s.OldBranches)})
		}
	}
	if asJSON {
		return printJSON(env, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(env.Stdout, "no %s (of %d)\n", describeQuery(query), len(all))
		return nil
	}
	// A column for each patch filtered on: which side of it the instance is.
	var patches []string
	for _, id := range []string{query.Patch, query.WithoutPatch} {
		if id != "" {
			patches = append(patches, id)
		}
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "ID\tWORKFLOW\tSTATE\tSTARTED\tWAITING UNTIL\t")
	for _, id := range patches {
		fmt.Fprintf(tw, "PATCH %s\t", id)
	}
	fmt.Fprintln(tw, "ERROR")
	for _, l := range list {
		started, waiting, errText := "-", "-", "-"
		if l.StartedAt != nil {
			started = timefmt.Format(l.StartedAt.Time)
		}
		if l.WaitingUntil != nil {
			waiting = timefmt.Format(l.WaitingUntil.Time)
		}
		if l.Error != "" {
			errText = shorten(l.Error, 60)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t", l.ID, l.Workflow, l.State, started, waiting)
		for _, id := range patches {
			fmt.Fprintf(tw, "%s\t", side(l, id))
		}
		fmt.Fprintln(tw, errText)
	}
	return tw.Flush()
}

// side says which side of patch id an instance is on: "new" when its
// history holds the marker, "old" when it notes the old branch, "-" when
// it holds neither (not at the point yet, or past it since before the
// patch and asleep since).
func side(l listedPatches, id string) string {
	switch {
	case slices.Contains(l.Patches, id):
		return "new"
	case slices.Contains(l.OldBranches, id):
		return "old"
	}
	return "-"
}

// describeQuery names the instances query keeps, for "no … (of n)":
// "running workflows without patch courier".
func describeQuery(query orchestration.InstanceQuery) string {
	d := "workflows"
	if query.State != "" {
		d = string(query.State) + " " + d
	}
	if query.Patch != "" {
		d += " with patch " + query.Patch
	}
	if query.WithoutPatch != "" {
		d += " without patch " + query.WithoutPatch
	}
	return d
}

// nonNil returns ids, or an empty slice for nil: [] in JSON, not null.
func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// readInstances returns the status of every instance, by start time then
// ID, paging through orchestration.ReadInstances (which holds one history
// at a time).
func readInstances(ctx context.Context, q sqlx.ExtContext) ([]orchestration.Status, error) {
	var out []orchestration.Status
	after := ""
	for {
		page, more, err := orchestration.ReadInstances(ctx, q, orchestration.InstanceQuery{After: after, Limit: orchestration.MaxInstancesRead})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if !more || len(page) == 0 {
			break
		}
		after = page[len(page)-1].Instance
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.Before(out[j].StartedAt)
		}
		return out[i].Instance < out[j].Instance
	})
	return out, nil
}
