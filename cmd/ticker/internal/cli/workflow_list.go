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
		Use:   "list [--db passage.db] [--state running|completed|failed|cancelled|stuck] [--tz UTC] [--json]",
		Short: "list the workflow instances: workflow, state, started, waiting until, error",
		Args:  noArgs,
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN of the orchestration engine, opened read-only: list never creates, migrates or locks it")
	state := c.Flags().String("state", "", "list only the instances in this state: running, completed, failed, cancelled or stuck (default all)")
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
		db, err := dbf.database()
		if err != nil {
			return err
		}
		return listWorkflows(c.Context(), env, db, orchestration.State(*state), loc, *asJSON)
	}
	return c
}

// listWorkflows prints the instances of db in state (all when ""), by
// start time, times in loc.
func listWorkflows(ctx context.Context, env Env, db database, state orchestration.State, loc *time.Location, asJSON bool) error {
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
	list := []listedWorkflow{} // [] rather than null in JSON
	for _, s := range all {
		if state == "" || s.State == state {
			list = append(list, listed(s, loc))
		}
	}
	if asJSON {
		return printJSON(env, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(env.Stdout, "no %s workflows (of %d)\n", state, len(all))
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKFLOW\tSTATE\tSTARTED\tWAITING UNTIL\tERROR")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, l.Workflow, l.State, started, waiting, errText)
	}
	return tw.Flush()
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
