package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/tick"
)

// The tickers page shows the skipped-tick counts of a ticker running beside
// the dashboard, unit by unit, and none without one.
func TestTheTickersPageShowsTheRunningTickersCounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	counts := map[tick.Unit]dashboard.TickerCounts{
		tick.Minute: {Emitted: 1440, Skipped: 1234, PublishFailures: 2},
		tick.Hour:   {Emitted: 24, Skipped: 7},
	}
	page := func(srv string) string {
		res, err := http.Get(srv + "/")
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return string(body)
	}
	cell := `<td class="num">%s</td>`
	row := func(unit, emitted, skipped, failures string) *regexp.Regexp {
		return regexp.MustCompile(`(?s)<td>` + unit + `</td>.*?` + sprintf(cell, emitted) + sprintf(cell, skipped) + sprintf(cell, failures) + `</tr>`)
	}

	with := page(f.serve(t, dashboard.WithTickerCounts(func() map[tick.Unit]dashboard.TickerCounts { return counts })).URL)
	require.Regexp(t, row("minute", "1,440", "1,234", "2"), with)
	require.Regexp(t, row("hour", "24", "7", "0"), with)

	without := page(f.serve(t).URL)
	require.NotContains(t, without, "<th>Skipped</th>")
}

func sprintf(format, s string) string { return regexp.QuoteMeta(fmt.Sprintf(format, s)) }

func TestAPIStatusIsReadStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t)
	var got dashboard.Status
	require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/status", &got))
	want, err := dashboard.ReadStatus(context.Background(), f.db.DB, f.clock.Now(), time.UTC)
	require.NoError(t, err)
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	require.JSONEq(t, string(wantJSON), string(gotJSON))
	require.Equal(t, "replica-a", got.Lease.Holder)
	require.EqualValues(t, 3, got.Lease.Term)
}
