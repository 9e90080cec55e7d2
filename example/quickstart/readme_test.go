package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's "use it as a library" snippet is this program's code: if one
// changes without the other, the README would show code that was never
// compiled.
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

	// The README shows the body of run, one tab less indented.
	var indented strings.Builder
	for line := range strings.Lines(block) {
		if strings.TrimSpace(line) != "" {
			indented.WriteString("\t")
		}
		indented.WriteString(line)
	}
	require.Contains(t, string(source), indented.String())
}
