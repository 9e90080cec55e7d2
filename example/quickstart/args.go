package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// checkArgs ends the process on any command-line argument: after the
// usage on -h (exit 0), or after an error and the usage (exit 2).
func checkArgs() {
	if err := parseArgs(os.Args[1:], os.Stderr); errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	} else if err != nil {
		os.Exit(2)
	}
}

// parseArgs reads the command line, which takes no arguments: -h prints
// what the program does, anything else is refused, and neither starts it
// (it ran for minutes on "-h" before).
func parseArgs(args []string, out io.Writer) error {
	flags := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	flags.SetOutput(out)
	flags.Usage = func() {
		fmt.Fprint(out, `usage: go run ./example/quickstart

Places one order due in a minute on a bus with a durable ticker and a
to-do list of unpaid orders, and prints its cancellation when the next
minute boundary after the deadline passes (about two minutes on the real
clock). The database is a SQLite file in a temporary directory, removed
on the way out. Ctrl-C stops it gracefully. It takes no arguments.
`)
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", flags.Arg(0))
		fmt.Fprintln(out, "quickstart:", err)
		flags.Usage()
		return err
	}
	return nil
}
