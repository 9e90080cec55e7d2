package cli

import (
	"context"
	"fmt"
	"runtime/debug"
)

func versionCommand(_ context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "version", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	fmt.Fprintf(env.Stdout, "ticker %s\n", v)
	return nil
}
