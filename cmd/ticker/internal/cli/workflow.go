package cli

import (
	"github.com/spf13/cobra"
)

// workflowCommand is "ticker workflow": its subcommands, one a file
// (workflow_<verb>.go); what they share is workflow_store.go.
func workflowCommand(env Env) *cobra.Command {
	return group("workflow", "durable workflow instances",
		workflowListCommand(env),
		workflowShowCommand(env),
		workflowSignalCommand(env),
		workflowCancelCommand(env),
	)
}

// The histories are read through orchestration's inspection functions
// (ReadHistory, ReadInstances, StatusOf), which never migrate:
// orchestration.New creates the event store's and the to-do list's
// tables, so the commands that only read open the database read-only and
// never call it.
