package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/passage-of-time/passage/example/services/ordersvc"
	"github.com/passage-of-time/passage/example/services/timesvc"
)

func main() {
	os.Exit(mainCode(os.Args[1:]))
}

// mainCode runs the command line args until it is done or interrupted,
// and returns the process's exit code.
func mainCode(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "services:", err)
		return 1
	}
	return 0
}

// run runs one service when args name it, or the launcher.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "time":
			return timesvc.Run(ctx, args[1:], stdout)
		case "orders":
			return ordersvc.Run(ctx, args[1:], stdout)
		}
	}
	return launch(ctx, args, stdout)
}
