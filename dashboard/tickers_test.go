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

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/outbox"
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

// The tickers page says how many records the outbox holds and how long
// ago the oldest was recorded, as outbox.ReadSize reads them (the
// passage_outbox_* gauges' figures); a database whose outbox was never
// opened holds none, and the page opens nothing.
func TestBrowserTheTickersPageShowsTheOutboxSize(t *testing.T) {
	ctx := browser(t)
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			db, _ := b.Open(t)
			f := newFixture(t, db)
			srv := f.serveAt(t, start)
			require.Equal(t, "No records held.", text(t, ctx, srv.URL+"/", "#outbox"))

			clock := clockwork.NewFakeClockAt(start.Add(-3 * time.Hour))
			box, err := outbox.Open(t.Context(), db.DB, outbox.WithClock(clock))
			require.NoError(t, err)
			for i := range 1500 {
				require.NoError(t, box.WriteTx(t.Context(), db.DB, outbox.Record{Stream: "minute", Key: fmt.Sprint("k", i), Type: "T", Body: []byte("{}")}))
				clock.Advance(time.Second)
			}
			require.Equal(t, "1,500 records held, the oldest recorded 3 h ago.", text(t, ctx, srv.URL+"/", "#outbox"))
			require.Equal(t, "2026-11-20T06:30:00Z", hovered(t, ctx, "#outbox"))
		})
	}
}
