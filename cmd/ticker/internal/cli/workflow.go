package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/orchestration"
)

// workflowCommands are the subcommands of "ticker workflow".
func workflowCommands() []command {
	return []command{
		{"list", "list the workflow instances: workflow, state, started, waiting until, error", workflowListCommand, graceOther},
		{"show", "print an instance's history as a timeline, then its state", workflowShowCommand, graceOther},
		{"signal", "send a signal (with a JSON payload) to a running instance", workflowSignalCommand, graceOther},
		{"cancel", "ask a running instance to cancel: its compensations run", workflowCancelCommand, graceOther},
	}
}

func workflowCommand(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(env.Stdout, "Usage: ticker workflow <subcommand> [flags]   (ticker workflow <subcommand> -h for its flags)")
		fmt.Fprintln(env.Stdout)
		for _, c := range workflowCommands() {
			fmt.Fprintf(env.Stdout, "  %-8s %s\n", c.name, c.summary)
		}
		if len(args) == 0 {
			return usagef("a subcommand is needed")
		}
		return nil
	}
	for _, c := range workflowCommands() {
		if c.name == args[0] {
			if err := c.run(ctx, env, args[1:]); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			return nil
		}
	}
	return usagef("unknown subcommand %q (run \"ticker workflow -h\")", args[0])
}

// The histories are read through orchestration's inspection functions
// (ReadHistory, ReadInstances, StatusOf), which never migrate:
// orchestration.New creates the event store's and the to-do list's
// tables, so the commands that only read open the database read-only and
// never call it.

// eventsTable is the event store's table, whose absence says the
// database is not an orchestration engine's at all.
const eventsTable = "eventstore_events"

// errNoWorkflows is returned for a database that holds no instance.
var errNoWorkflows = errors.New("no workflows: the database has no event store tables (is it the database the orchestration engine uses?)")

// errNoInstances is returned for an event store without workflow streams.
var errNoInstances = errors.New("no workflows: the event store holds no workflow/ streams")

// openWorkflows opens dsn read-only in a read-only transaction and checks
// that it has the event store's table; done ends both.
func openWorkflows(ctx context.Context, dsn string) (q sqlx.ExtContext, done func(), err error) {
	snap, err := openSnapshot(ctx, dsn, 0)
	if err != nil {
		return nil, nil, err
	}
	if !snap.tables[eventsTable] {
		snap.close()
		return nil, nil, fmt.Errorf("--db %s: %w", redact(dsn), errNoWorkflows)
	}
	return snap.tx, snap.close, nil
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

// listedWorkflow is a line of "workflow list", and an element of its
// --json array.
type listedWorkflow struct {
	ID           string     `json:"id"`
	Workflow     string     `json:"workflow"`
	State        string     `json:"state"`
	StartedAt    *sink.Time `json:"started_at"`
	WaitingUntil *sink.Time `json:"waiting_until"`
	Error        string     `json:"error"`
	Events       int64      `json:"events"`
}

func listed(s orchestration.Status, loc *time.Location) listedWorkflow {
	l := listedWorkflow{ID: s.Instance, Workflow: s.Workflow, State: string(s.State), Error: s.Error, Events: s.Events}
	if !s.StartedAt.IsZero() {
		l.StartedAt = sink.TimeOf(s.StartedAt.In(loc))
	}
	if !s.WaitingUntil.IsZero() {
		l.WaitingUntil = sink.TimeOf(s.WaitingUntil.In(loc))
	}
	return l
}

var workflowStates = []orchestration.State{orchestration.Running, orchestration.Completed, orchestration.Failed, orchestration.Cancelled, orchestration.Stuck}

func workflowListCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "workflow list", "[--db passage.db] [--state running|completed|failed|cancelled|stuck] [--tz UTC] [--json]")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN of the orchestration engine, opened read-only: list never creates, migrates or locks it")
	state := fs.String("state", "", "list only the instances in this state: running, completed, failed, cancelled or stuck (default all)")
	tz := fs.String("tz", "UTC", "IANA time zone to show the times in")
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	if err := parse(fs, args); err != nil {
		return err
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	if *state != "" {
		known := false
		for _, s := range workflowStates {
			known = known || string(s) == *state
		}
		if !known {
			return usagef("--state %q: not running, completed, failed, cancelled or stuck", *state)
		}
	}
	q, done, err := openWorkflows(ctx, *dsn)
	if err != nil {
		return err
	}
	defer done()
	all, err := readInstances(ctx, q)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return fmt.Errorf("--db %s: %w", redact(*dsn), errNoInstances)
	}
	list := []listedWorkflow{} // [] rather than null in JSON
	for _, s := range all {
		if *state == "" || string(s.State) == *state {
			list = append(list, listed(s, loc))
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(list) == 0 {
		fmt.Fprintf(env.Stdout, "no %s workflows (of %d)\n", *state, len(all))
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

// shorten returns s's first line, cut to n runes with an ellipsis.
func shorten(s string, n int) string {
	line, _, more := strings.Cut(s, "\n")
	r := []rune(line)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if more {
		return line + " …"
	}
	return line
}

// positional parses the flags and exactly n arguments, before, between or
// after them, in order; names says which, for the error.
func positional(fs *flagSet, args []string, names string, n int) ([]string, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	var got []string
	for fs.NArg() > 0 {
		got = append(got, fs.Arg(0))
		if err := parseMore(fs, fs.Args()[1:]); err != nil {
			return nil, err
		}
	}
	if len(got) != n {
		return nil, usagef("give %s (got %d arguments)", names, len(got))
	}
	return got, nil
}

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

// unknownInstance says that id has no history in dsn.
func unknownInstance(id, dsn string) error {
	return fmt.Errorf("no workflow instance %q in %s (see \"ticker workflow list\")", id, redact(dsn))
}

func workflowShowCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "workflow show", "[--db passage.db] [--tz UTC] [--json] ID")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN of the orchestration engine, opened read-only")
	tz := fs.String("tz", "UTC", "IANA time zone to show the times in")
	asJSON := fs.Bool("json", false, "print JSON instead of a timeline")
	got, err := positional(fs, args, "exactly one instance id", 1)
	if err != nil {
		return err
	}
	id := got[0]
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	q, done, err := openWorkflows(ctx, *dsn)
	if err != nil {
		return err
	}
	defer done()
	history, err := orchestration.ReadHistory(ctx, q, id)
	if err != nil {
		return err
	}
	if len(history) == 0 {
		return unknownInstance(id, *dsn)
	}
	st := orchestration.StatusOf(id, history)
	shown := shownWorkflow{History: []timelineEvent{}}
	for _, h := range history {
		shown.History = append(shown.History, timelineEvent{
			Version: h.Version, RecordedAt: sink.Time{Time: h.RecordedAt.In(loc)}, Type: h.Type, Description: h.Describe(loc), Data: h.Data,
		})
	}
	shown.listedWorkflow = listed(st, loc)
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(shown)
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

// compact prints JSON on one line; "null" when there is none.
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
