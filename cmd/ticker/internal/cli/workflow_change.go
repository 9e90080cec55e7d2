package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/passage-of-time/passage/orchestration"
)

// changeWorkflow checks, read-only, that dsn holds the running instance
// id — so that a mistyped --db or id creates nothing, since
// orchestration.New creates its tables — then opens the engine on it and
// calls change.
func changeWorkflow(ctx context.Context, env Env, dsn, id, verb string, change func(*orchestration.Engine) error) error {
	q, done, err := openWorkflows(ctx, dsn)
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
		return unknownInstance(id, dsn)
	}
	if st := orchestration.StatusOf(id, history); st.State != orchestration.Running {
		// The engine refuses it too (orchestration.ErrFinished); asking
		// first, read-only, creates nothing on a mistyped --db.
		return fmt.Errorf("%s is %s: nothing would %s it", id, st.State, verb)
	}
	db, err := openDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	e, err := orchestration.New(ctx, db.DB, orchestration.WithClock(env.clock()))
	if err != nil {
		return err
	}
	err = change(e)
	if errors.Is(err, orchestration.ErrUnknownInstance) {
		return unknownInstance(id, dsn)
	}
	return err
}

func workflowSignalCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "workflow signal", "[--db passage.db] [--payload JSON] ID NAME")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN of the orchestration engine holding the instance")
	payload := fs.String("payload", "", "the signal's payload, a JSON value the instance's Await decodes (default none: null)")
	got, err := positional(fs, args, "an instance id and a signal name", 2)
	if err != nil {
		return err
	}
	id, name := got[0], got[1]
	if name == "" {
		return usagef("the signal name must not be empty")
	}
	raw := json.RawMessage("null")
	if *payload != "" {
		if !json.Valid([]byte(*payload)) {
			var v any
			err := json.Unmarshal([]byte(*payload), &v)
			return usagef("--payload %q: not a JSON value: %v", *payload, err)
		}
		raw = json.RawMessage(*payload)
	}
	return changeWorkflow(ctx, env, *dsn, id, "read", func(e *orchestration.Engine) error {
		if err := e.Signal(ctx, id, name, raw); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "signalled %s: %s %s (it runs when a processor next ticks)\n", id, name, compact(raw))
		return nil
	})
}

func workflowCancelCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "workflow cancel", "[--db passage.db] ID")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN of the orchestration engine holding the instance")
	got, err := positional(fs, args, "exactly one instance id", 1)
	if err != nil {
		return err
	}
	id := got[0]
	return changeWorkflow(ctx, env, *dsn, id, "cancel", func(e *orchestration.Engine) error {
		if err := e.Cancel(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "cancel requested for %s: its compensations run and it ends cancelled when a processor next ticks\n", id)
		return nil
	})
}
