package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/orchestration"
)

// errNoWorkflows is returned for a database that holds no instance.
var errNoWorkflows = errors.New("no workflows: the database has no event store tables (is it the database the orchestration engine uses?)")

// errNoInstances is returned for an event store without workflow streams.
var errNoInstances = errors.New("no workflows: the event store holds no workflow/ streams")

// positional takes exactly n arguments, before, between or after the
// flags; names says which, for the error.
func positional(names string, n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("give %s (got %d arguments)", names, len(args))
		}
		return nil
	}
}

// openWorkflows opens db read-only in a read-only transaction and checks
// that it holds an event store, without which the database is not an
// orchestration engine's at all; done ends both.
func openWorkflows(ctx context.Context, db database) (q sqlx.ExtContext, done func(), err error) {
	snap, err := db.snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	has, err := eventstore.HasState(ctx, snap.tx)
	if err != nil || !has {
		snap.close()
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", db, err)
		}
		return nil, nil, fmt.Errorf("--db %s: %w", db, errNoWorkflows)
	}
	return snap.tx, snap.close, nil
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

// unknownInstance says that id has no history in db.
func unknownInstance(id string, db database) error {
	return fmt.Errorf("no workflow instance %q in %s (see \"ticker workflow list\")", id, db)
}

// changeWorkflow checks, read-only, that db holds the running instance
// id — so that a mistyped --db or id creates nothing, since
// orchestration.New creates its tables — then opens the engine on it and
// calls change.
func changeWorkflow(ctx context.Context, env Env, db database, id, verb string, change func(*orchestration.Engine) error) error {
	q, done, err := openWorkflows(ctx, db)
	if err != nil {
		if errors.Is(err, errNoWorkflows) {
			return fmt.Errorf("no workflow instance %q: %w", id, err)
		}
		return err
	}
	history, err := orchestration.ReadHistory(ctx, q, id)
	done()
	if err != nil {
		return err
	}
	if len(history) == 0 {
		return unknownInstance(id, db)
	}
	if st := orchestration.StatusOf(id, history); st.State != orchestration.Running {
		// The engine refuses it too (orchestration.ErrFinished); asking
		// first, read-only, creates nothing on a mistyped --db.
		return fmt.Errorf("%s is %s: nothing would %s it", id, st.State, verb)
	}
	w, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	e, err := orchestration.New(ctx, w.DB, orchestration.WithClock(env.clock()))
	if err != nil {
		return err
	}
	err = change(e)
	if errors.Is(err, orchestration.ErrUnknownInstance) {
		return unknownInstance(id, db)
	}
	return err
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
