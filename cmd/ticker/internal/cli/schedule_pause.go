package cli

import (
	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/schedule"
)

func schedulePauseCommand(env Env) *cobra.Command {
	return scheduleChangeCommand(env, "pause", "stop a schedule from firing until resumed", "paused", (*schedule.Scheduler).Pause)
}
