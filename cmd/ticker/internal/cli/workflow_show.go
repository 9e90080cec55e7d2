package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/orchestration"
)

// timelineEvent is an event of "workflow show --json".
type timelineEvent struct {
	Version     int64           `json:"version"`
	RecordedAt  sink.Time       `json:"recorded_at"`
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Data        json.RawMessage `json:"data"`
}

// shownWorkflow is what "workflow show --json" prints.
type shownWorkflow struct {
	listedWorkflow
	History []timelineEvent `json:"history"`
}

func workflowShowCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "show [--db passage.db] [--tz UTC] [--json] ID",
		Short: "print an instance's history as a timeline, then its state",
		Args:  positional("exactly one instance id", 1),
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN of the orchestration engine, opened read-only")
	c.ValidArgsFunction = completeInstances(dbf, false)
	tz := addTZ(c, "IANA time zone to show the times in")
	asJSON := addJSON(c, "print JSON instead of a timeline")
	c.RunE = func(c *cobra.Command, args []string) error {
		loc, err := tz.location()
		if err != nil {
			return err
		}
		db, err := dbf.database()
		if err != nil {
			return err
		}
		return showWorkflow(c.Context(), env, db, args[0], loc, *asJSON)
	}
	return c
}

// showWorkflow prints the history of the instance id as a timeline in
// loc, then its state.
func showWorkflow(ctx context.Context, env Env, db database, id string, loc *time.Location, asJSON bool) error {
	q, done, err := openWorkflows(ctx, db)
	if err != nil {
		return err
	}
	defer done()
	history, err := orchestration.ReadHistory(ctx, q, id)
	if err != nil {
		return err
	}
	if len(history) == 0 {
		return unknownInstance(id, db)
	}
	st := orchestration.StatusOf(id, history)
	shown := shownWorkflow{History: []timelineEvent{}}
	for _, h := range history {
		shown.History = append(shown.History, timelineEvent{
			Version: h.Version, RecordedAt: sink.Time{Time: h.RecordedAt.In(loc)}, Type: h.Type, Description: h.Describe(loc), Data: h.Data,
		})
	}
	shown.listedWorkflow = listed(st, loc)
	if asJSON {
		return printJSON(env, shown)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, e := range shown.History {
		fmt.Fprintf(tw, "%s\tv%d\t%s\n", timefmt.Format(e.RecordedAt.Time), e.Version, e.Description)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, summary(st, loc))
	return nil
}

// summary is the line after the timeline: the instance's state.
func summary(s orchestration.Status, loc *time.Location) string {
	head := fmt.Sprintf("%s (workflow %s, %d events): %s", s.Instance, s.Workflow, s.Events, s.State)
	switch {
	case s.Error != "":
		return head + ": " + s.Error
	case s.State == orchestration.Running && !s.WaitingUntil.IsZero():
		return head + ", waiting until " + timefmt.Format(s.WaitingUntil.In(loc))
	case s.State == orchestration.Running:
		return head + ", due to run when a processor next ticks"
	}
	return head
}
