package cli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

func TestPreviewShowsTheShortDSTDay(t *testing.T) {
	t.Parallel()
	r := run(t, nil, nil, "preview", "--unit", "day", "--tz", "Europe/Warsaw", "--from", "2026-03-28T12:00:00+01:00", "-n", "2")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4, r.stdout)
	require.Regexp(t, `^2026-03-29T00:00:00\+01:00\s+Sun\s+23h0m0s\s+UTC offset changes \+01:00 → \+02:00$`, lines[2])
	require.Regexp(t, `^2026-03-30T00:00:00\+02:00\s+Mon\s+24h0m0s\s*$`, lines[3])
}
