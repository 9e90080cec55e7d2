package cli

import (
	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/schedule"
)

func scheduleDeleteCommand(env Env) *cobra.Command {
	return scheduleChangeCommand(env, "delete", "remove a schedule (its recorded runs stay)", "deleted", (*schedule.Scheduler).Delete)
}
