package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's "use it as a library" program is this file, verbatim: if
// one changes without the other, the README would show code that was never
// compiled. It is the whole file, imports and the SQLite driver's blank
// import included, so that it compiles when pasted into a new module.
func TestREADMEShowsThisProgramVerbatim(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	source, err := os.ReadFile("main.go")
	require.NoError(t, err)

	_, after, ok := strings.Cut(string(readme), "## Use it as a library")
	require.True(t, ok, "README section")
	_, block, ok := strings.Cut(after, "```go\n")
	require.True(t, ok, "README code block")
	block, _, _ = strings.Cut(block, "```")
	require.Equal(t, string(source), block)
}
