package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Version is the ticker's version, set at build time with
// -ldflags "-X github.com/passage-of-time/passage/cmd/ticker/internal/cli.Version=v1.2.3".
var Version = "dev"

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the command failed while running
	ExitUsage = 2 // bad flags or values
	// ExitAbandoned is returned when the command did not return within its
	// grace period after ctx was cancelled (SIGINT/SIGTERM): Main gives up
	// waiting so that a signal always ends the program, even one whose
	// computation never yields. main turns it into 128+signal.
	ExitAbandoned = 128
	// ExitInterrupted is returned when a signal (ctx cancelled) stopped a
	// command before its work was done ("run --once", "run --until",
	// "demo"…); the command stopped within its bound and said where it
	// stopped. main turns it into 128+signal, as for ExitAbandoned. A
	// stopped "run", whose work is to run until told to stop, exits
	// ExitOK.
	ExitInterrupted = 130
)

// Grace periods after ctx is cancelled. "run" finishes the emission in
// flight and saves its cursor within stopTimeout, so it gets that and a
// little more ("serve" shuts its server down within the same bound);
// every other command has nothing worth waiting for.
const (
	graceRun   = stopTimeout + 2*time.Second
	graceOther = 2 * time.Second
)

// Main runs the ticker command with args (without the program name) and
// returns the process exit code. It returns when the command is done or, for
// "run", when ctx is cancelled (SIGINT/SIGTERM): the emission in flight
// finishes, the cursor is saved, and the exit code is 0.
//
// A command that has not returned within its grace period after ctx is
// cancelled is abandoned: Main says so on stderr and returns ExitAbandoned
// while the command's goroutine is left running (the process is about to
// exit). A signal must always end the program, even when a computation
// never yields.
func Main(ctx context.Context, args []string, env Env) int {
	root := Command(env)
	args = gnuStyle(root, asPeopleTypeThem(args))
	if len(args) == 0 || !strings.HasPrefix(args[0], cobra.ShellCompRequestCmd) {
		// Not for a completion, whose flags cobra parses twice.
		onceOnly(root)
	}
	// The command the line names, for its grace and its name in the
	// abandoning line; Execute finds the same.
	target, _, _ := root.Find(args)
	top := topName(target)
	grace := graceOther
	if top == "run" || top == "serve" {
		grace = graceRun
	}
	if env.Grace > 0 {
		grace = env.Grace
	}
	root.SetArgs(args)
	var executed *cobra.Command
	err, ok := runWithGrace(ctx, grace, func() error {
		c, err := root.ExecuteContextC(ctx)
		executed = c
		return err
	})
	if !ok {
		fmt.Fprintf(env.Stderr, "ticker %s: still running %s after being told to stop: abandoned\n", top, grace)
		return ExitAbandoned
	}
	return exitCode(ctx, env, executed, err)
}

// exitCode says what err, returned by the command executed, means for
// the process, on stderr and in the exit code. A command's error is
// printed after its path: "ticker run: …", "ticker schedule: add: …".
func exitCode(ctx context.Context, env Env, executed *cobra.Command, err error) int {
	prefix := strings.Join(strings.Fields(executed.CommandPath()), ": ")
	if executed.HasParent() {
		prefix = "ticker " + strings.TrimPrefix(prefix, "ticker: ")
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errUsageShown):
		return ExitUsage
	case errors.As(err, new(rootError)):
		fmt.Fprintf(env.Stderr, "ticker: %v\n", err)
		return ExitUsage
	case errors.As(err, new(interruptedError)):
		fmt.Fprintf(env.Stderr, "%s: %v\n", prefix, err)
		return ExitInterrupted
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		// The signal cut the command's work short: one quiet line,
		// not the error of whatever it was doing.
		fmt.Fprintf(env.Stderr, "ticker %s: stopped by a signal before it was done\n", topName(executed))
		return ExitInterrupted
	case errors.As(err, new(usageError)):
		fmt.Fprintf(env.Stderr, "%s: %v\n", prefix, err)
		return ExitUsage
	default:
		fmt.Fprintf(env.Stderr, "%s: %v\n", prefix, err)
		return ExitError
	}
}

// asPeopleTypeThem rewrites the ways people ask for the version and for
// help into the commands: "ticker --version", "ticker -help run".
func asPeopleTypeThem(args []string) []string {
	if len(args) == 0 {
		return args
	}
	switch args[0] {
	case "--version", "-version", "-v":
		return append([]string{"version"}, args[1:]...)
	case "-h", "-help", "--help":
		if len(args) > 1 {
			return append([]string{"help"}, args[1:]...)
		}
	}
	return args
}

// topName is the name of the command under the root that c is or is
// under ("schedule" for "ticker schedule add"), or "ticker".
func topName(c *cobra.Command) string {
	if c == nil || !c.HasParent() {
		return "ticker"
	}
	for c.Parent().HasParent() {
		c = c.Parent()
	}
	return c.Name()
}

// runWithGrace runs f in its own goroutine and returns its error, or
// ok=false when ctx has been cancelled for longer than grace and f has
// still not returned.
func runWithGrace(ctx context.Context, grace time.Duration, f func() error) (err error, ok bool) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err, true
	case <-ctx.Done():
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-done:
		return err, true
	case <-timer.C:
		return nil, false
	}
}
