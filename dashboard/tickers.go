package dashboard

import (
	"context"
	"html/template"
	"net/http"
	"time"

	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/tick"
)

// unitRow is a ticker unit as the tickers page shows it.
type unitRow struct {
	UnitStatus
	Lag    string
	Counts *TickerCounts
	// Level is how bad its lag is ("", amber, red: trouble.go).
	Level string
}

// tickersData is the tickers page: the status read, its units, the
// lease and the lag chart.
type tickersData struct {
	Status   Status
	Units    []unitRow
	Counted  bool
	LeaseFor string
	// LeaseLevel is how bad the lease's state is ("" while live).
	LeaseLevel string
	Outbox     outboxSize
	Chart      template.HTML
}

// outboxSize is what the outbox holds, as the tickers page says it:
// how many records, delivered or not, and when the oldest was recorded
// (pruned after ticker run's --outbox-retention), its age the page's
// relative time.
type outboxSize struct {
	Records int
	Oldest  *Time
}

// readOutboxSize reads the outbox's size (outbox.ReadSize: one
// statement, and none on a database whose outbox was never opened).
func (d *Dashboard) readOutboxSize(ctx context.Context) (outboxSize, error) {
	n, oldest, err := outbox.ReadSize(ctx, d.db)
	if err != nil || n == 0 {
		return outboxSize{}, err
	}
	return outboxSize{Records: n, Oldest: TimeOf(oldest.In(d.loc))}, nil
}

// tickersPage is the start page: the ticker's units, its lease, what a
// ticker in this process counted (WithTickerCounts) and the lag chart.
func (d *Dashboard) tickersPage(w http.ResponseWriter, r *http.Request) {
	st, err := ReadStatus(r.Context(), d.db, d.clock.Now(), d.loc)
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	box, err := d.readOutboxSize(r.Context())
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	data := tickersData{Status: st, Outbox: box, Chart: lagChart(d.lag.all(), d.loc)}
	var counts map[tick.Unit]TickerCounts
	if d.counts != nil {
		counts, data.Counted = d.counts(), true
	}
	for _, u := range st.Units {
		row := unitRow{UnitStatus: u, Lag: "0s"}
		if late := st.Now.Sub(u.Next.Time); late > 0 {
			row.Lag = late.Round(time.Second).String()
			row.Level = lateness(late, tickerGrace, tickerRed)
		}
		if c, ok := counts[u.Unit]; ok {
			row.Counts = &c
			if c.PublishFailures > 0 {
				row.Level = red
			}
		}
		data.Units = append(data.Units, row)
	}
	if st.Lease != nil {
		data.LeaseFor = st.Lease.Expires.Sub(st.Now.Time).Round(time.Second).String()
		if !st.Lease.Live {
			data.LeaseLevel = worse(amber, lateness(st.Now.Sub(st.Lease.Expires.Time), leaseGrace, leaseGrace))
		}
	}
	d.renderStatus(w, r, "tickers", "Tickers", data, &st)
}

// apiStatus is the status the tickers page shows, read by the same
// function (ReadStatus).
func (d *Dashboard) apiStatus(w http.ResponseWriter, r *http.Request) {
	st, err := ReadStatus(r.Context(), d.db, d.clock.Now(), d.loc)
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// apiLag is the lag history the tickers page charts.
func (d *Dashboard) apiLag(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, d.lag.all())
}
