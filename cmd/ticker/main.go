package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	received := make(chan os.Signal, 1)
	go func() {
		sig := <-signals
		// The first signal asks the command to stop; restoring the default
		// action makes a second one end the process at once, whatever the
		// command is doing.
		signal.Stop(signals)
		received <- sig
		cancel()
	}()
	code := cli.Main(ctx, os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	if code == cli.ExitAbandoned || code == cli.ExitInterrupted {
		// The command ignored the stop request for its grace period, or
		// stopped before its work was done: exit as a process killed by
		// that signal conventionally does.
		select {
		case sig := <-received:
			if s, ok := sig.(syscall.Signal); ok {
				code = 128 + int(s)
			}
		default:
		}
	}
	os.Exit(code)
}
