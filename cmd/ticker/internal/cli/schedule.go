package cli

import (
	"github.com/spf13/cobra"
)

// scheduleCommand is "ticker schedule": its subcommands, one a file
// (schedule_<verb>.go); what they share is scheduler.go.
func scheduleCommand(env Env) *cobra.Command {
	return group("schedule", "schedules that send commands",
		schedulePreviewCommand(env),
		scheduleAddCommand(env),
		scheduleListCommand(env),
		schedulePauseCommand(env),
		scheduleResumeCommand(env),
		scheduleTriggerCommand(env),
		scheduleBackfillCommand(env),
		scheduleDeleteCommand(env),
		schedulePruneCommand(env),
	)
}
