package cli

import (
	"context"
	"errors"
)

func demoCommand(_ context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "demo", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	return errors.New("demo: not wired yet")
}
