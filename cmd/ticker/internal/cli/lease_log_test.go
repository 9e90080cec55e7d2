package cli_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/tick"
)

// What a newcomer met (issue 35): a standby taking the lease over said
// nothing, and a run that delivered its records said "delivered 0
// records" as it stopped (the drain's count alone). The standby now logs
// the takeover, naming the replica it took over from, and each stop line
// counts what its run delivered.
func TestAStandbyTakingTheLeaseSaysSoAndTheStopLineCountsTheRun(t *testing.T) {
	t.Parallel()
	for backend, dsn := range databases(t) {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start)
			args := []string{"--db", dsn, "--units", "minute", "--lease-ttl", "2m"}
			holder := startRun(t, clock, append(args, "--holder", "a")...)
			require.Eventually(t, holder.ticker.HoldsLease, 10*time.Second, time.Millisecond)
			standby := startRun(t, clock, append(args, "--holder", "b")...)
			require.NoError(t, tick.AdvanceAndWait(t.Context(), clock, time.Minute, holder.ticker, standby.ticker))
			holder.waitRecords(t, 1)
			require.NoError(t, tick.AdvanceAndWait(t.Context(), clock, time.Minute, holder.ticker, standby.ticker))
			holder.waitRecords(t, 2)

			require.Equal(t, cli.ExitOK, holder.stop(), holder.stderr.String())
			// A standby wakes when the lease it saw expires, at the latest.
			require.NoError(t, tick.AdvanceAndWait(t.Context(), clock, 2*time.Minute, standby.ticker))
			require.True(t, standby.ticker.HoldsLease(), "b took the lease a released")
			standby.waitRecords(t, 1)
			require.Equal(t, cli.ExitOK, standby.stop(), standby.stderr.String())

			require.Contains(t, standby.stderr.String(), `msg="took the lease over: this replica emits and delivers now" holder=b from=a term=`)
			require.NotContains(t, holder.stderr.String(), "took the lease over", "a first take is the 'running as' line's")
			require.Equal(t, "delivered 2 records", stopSummary(t, holder.stderr.String()))
			require.Equal(t, "delivered "+plural(strings.Count(standby.stdout.String(), "\n"), "record", "records"), stopSummary(t, standby.stderr.String()))
		})
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// stopSummary is the delivery part of a run's "stopped; …" line.
func stopSummary(t *testing.T, stderr string) string {
	t.Helper()
	for line := range strings.SplitSeq(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, "stopped; "); ok {
			i := strings.Index(rest, "delivered ")
			require.GreaterOrEqual(t, i, 0, line)
			return strings.SplitN(rest[i:], ";", 2)[0]
		}
	}
	t.Fatalf("no stop line in %s", stderr)
	return ""
}
