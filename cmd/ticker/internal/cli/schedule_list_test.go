package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// listedPolicies is the part of a "schedule list --json" element that
// --jitter and --overlap set.
type listedPolicies struct {
	Name    string  `json:"name"`
	Runs    int64   `json:"runs"`
	Skipped int64   `json:"skipped"`
	Jitter  *string `json:"jitter"`
	Overlap *string `json:"overlap"`
}

func listPolicies(t *testing.T, db string) map[string]listedPolicies {
	t.Helper()
	var listed []listedPolicies
	require.NoError(t, json.Unmarshal([]byte(ok(t, run(t, nil, nil, "schedule", "list", "--db", db, "--json"))), &listed))
	byName := map[string]listedPolicies{}
	for _, l := range listed {
		byName[l.Name] = l
	}
	return byName
}

// list shows a schedule's end — --max-runs and --until — in MAX RUNS and
// UNTIL columns, which appear only when a schedule has one (the table of
// schedules without an end stays as it was), and in --json as max_runs and
// until, left out when there is none. UNTIL is shown in --tz.
func TestScheduleListShowsMaxRunsAndUntil(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start)
			add := func(name string, args ...string) string {
				return ok(t, run(t, clock, nil, append([]string{"schedule", "add", "--db", db, "--name", name, "--spec", "@every 10m", "--command", name}, args...)...))
			}
			list := func(args ...string) string {
				return ok(t, run(t, clock, nil, append([]string{"schedule", "list", "--db", db}, args...)...))
			}
			add("plain")
			require.Equal(t, "NAME   NEXT SLOT             PAUSED  RUNS  SKIPPED  COMMAND  SPEC\n"+
				"plain  2026-11-21T12:10:00Z  no      0     0        plain    @every 10m0s from 1970-01-01T00:00:00Z\n", list(),
				"no MAX RUNS or UNTIL column while no schedule has an end")

			add("capped", "--max-runs", "3")
			add("dated", "--until", "2027-01-01T00:00:00+01:00")
			add("both", "--max-runs", "12", "--until", "2026-12-24", "--tz", "Europe/Warsaw")
			require.Equal(t, "NAME    NEXT SLOT             PAUSED  RUNS  SKIPPED  MAX RUNS  UNTIL                 COMMAND  SPEC\n"+
				"both    2026-11-21T12:10:00Z  no      0     0        12        2026-12-23T23:00:00Z  both     @every 10m0s from 1970-01-01T00:00:00Z\n"+
				"capped  2026-11-21T12:10:00Z  no      0     0        3         -                     capped   @every 10m0s from 1970-01-01T00:00:00Z\n"+
				"dated   2026-11-21T12:10:00Z  no      0     0        -         2026-12-31T23:00:00Z  dated    @every 10m0s from 1970-01-01T00:00:00Z\n"+
				"plain   2026-11-21T12:10:00Z  no      0     0        -         -                     plain    @every 10m0s from 1970-01-01T00:00:00Z\n", list())
			require.Regexp(t, `(?m)^dated\s+2026-11-21T13:10:00\+01:00\s+no\s+0\s+0\s+-\s+2027-01-01T00:00:00\+01:00\s+dated\s`, list("--tz", "Europe/Warsaw"), "UNTIL in --tz")

			add("spread", "--jitter", "1m")
			require.Regexp(t, `(?m)^NAME\s+NEXT SLOT\s+PAUSED\s+RUNS\s+SKIPPED\s+MAX RUNS\s+UNTIL\s+JITTER\s+OVERLAP\s+COMMAND\s+SPEC\n`+
				`both\s+\S+\s+no\s+0\s+0\s+12\s+2026-12-23T23:00:00Z\s+-\s+allow\s+both\s+@every`, list())
			require.Regexp(t, `(?m)^spread\s+\S+\s+no\s+0\s+0\s+-\s+-\s+1m0s\s+allow\s+spread\s+@every`, list())

			var listed []map[string]any
			require.NoError(t, json.Unmarshal([]byte(list("--json")), &listed))
			ends := map[string][2]any{}
			for _, l := range listed {
				ends[l["name"].(string)] = [2]any{l["max_runs"], l["until"]}
			}
			require.Equal(t, map[string][2]any{
				"both":   {12.0, "2026-12-23T23:00:00Z"},
				"capped": {3.0, nil},
				"dated":  {nil, "2026-12-31T23:00:00Z"},
				"plain":  {nil, nil},
				"spread": {nil, nil},
			}, ends)
		})
	}
}
