package main

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// "go run ./example/quickstart -h" started the program, which then ran
// for minutes; now -h says what it does and the program does not start.
func TestHelpSaysWhatItDoesInsteadOfRunning(t *testing.T) {
	for _, help := range []string{"-h", "-help", "--help"} {
		var out strings.Builder
		err := parseArgs([]string{help}, &out)
		require.True(t, errors.Is(err, flag.ErrHelp), "%s: %v", help, err)
		require.Contains(t, out.String(), "usage: go run ./example/quickstart")
		require.Contains(t, out.String(), "Ctrl-C stops it")
	}
}

func TestArgumentsAreRefusedNotIgnored(t *testing.T) {
	for _, args := range [][]string{{"--db", "x.db"}, {"extra"}} {
		var out strings.Builder
		err := parseArgs(args, &out)
		require.Error(t, err, "%q", args)
		require.False(t, errors.Is(err, flag.ErrHelp), "%q", args)
		require.Contains(t, out.String(), "usage: go run ./example/quickstart", "%q", args)
	}
	require.NoError(t, parseArgs(nil, &strings.Builder{}))
}
