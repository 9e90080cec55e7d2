package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func versionCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			v := Version
			if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
				v = info.Main.Version
			}
			_, err := fmt.Fprintf(env.Stdout, "ticker %s\n", v)
			return err
		},
	}
}
