package cli

import (
	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/schedule"
)

func scheduleResumeCommand(env Env) *cobra.Command {
	return scheduleChangeCommand(env, "resume", "let a paused schedule fire again from its next slot after now", "resumed", (*schedule.Scheduler).Resume)
}
