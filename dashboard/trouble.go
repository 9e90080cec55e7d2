package dashboard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/todolist"
)

// The summary at the top of every page: each kind of trouble a count,
// amber (look soon) or red (look now), linking to its rows, which their
// pages highlight in the same colour. The thresholds, which
// docs/alerting.md repeats for the alerts:
//
//   - ticker behind: a unit's next boundary is past by more than
//     tickerGrace (1 min: a ticker wakes every minute); red beyond
//     tickerRed (10 min).
//   - ticker failing: a unit's publish failures, counted by the ticker
//     running in this process (WithTickerCounts): red.
//   - lease expired: the lease has a holder and its end is past: amber
//     for leaseGrace (1 min: another replica takes over at its next
//     wake-up), red after.
//   - schedules overdue: next slot (plus jitter) past by more than
//     scheduleGrace (1 min); red when the most overdue is past by more
//     than scheduleRed (15 min).
//   - lists behind: a list's oldest due item has waited more than
//     listGrace (1 min); red beyond listRed (15 min).
//   - items parked: red (the attempts ran out: only a person moves them).
//   - items failing: attempts above zero, not parked: amber.
//   - workflows stuck: red; workflows failed: amber (a failure the
//     workflow returned; it stays counted until its history is removed).
//   - horizon held (PostgreSQL): a transaction with an xid open for more
//     than horizonGrace (1 min, WithHorizonGrace) holds every outbox
//     relay, so every delivery, back: amber, naming the oldest session
//     (pid, application, state, how long); red beyond horizonRed
//     (5 min, when /healthz says delivery is behind).
const (
	horizonGrace  = time.Minute
	horizonRed    = 5 * time.Minute
	tickerGrace   = time.Minute
	tickerRed     = 10 * time.Minute
	leaseGrace    = time.Minute
	scheduleGrace = time.Minute
	scheduleRed   = 15 * time.Minute
	listGrace     = time.Minute
	listRed       = 15 * time.Minute
)

// Levels of trouble, also the CSS classes' suffixes (trouble-amber).
const (
	amber = "amber"
	red   = "red"
)

// lateness says how bad late is against a grace and a red threshold: ""
// within the grace, amber up to red, red beyond.
func lateness(late, grace, redAfter time.Duration) string {
	switch {
	case late <= grace:
		return ""
	case late <= redAfter:
		return amber
	}
	return red
}

// scheduleLateness is lateness with the schedules' thresholds.
func scheduleLateness(late time.Duration) string { return lateness(late, scheduleGrace, scheduleRed) }

// worse returns the worse of two levels.
func worse(a, b string) string {
	if a == red || b == red {
		return red
	}
	if a == amber || b == amber {
		return amber
	}
	return ""
}

// troubleItem is one count of the summary.
type troubleItem struct {
	// ID names it: the element's id is "trouble-" + ID.
	ID    string
	Count int
	What  string
	Level string
	// Link is the filtered page of its rows, below the base path.
	Link string
}

// summary is the row of counts at the top of every page.
type summary struct {
	Items []troubleItem
	// Error says that some of it could not be read (the rest still
	// shows), without the database's words: they go to the log under the
	// reference Error gives.
	Error string
}

// summaryTTL is how long a summary serves the pages after it was read:
// it reads the whole status, every schedule and every item, which at
// 100,000 schedules costs more than the page under it, and pages
// reload every 10 s.
const summaryTTL = time.Second

// summaryCache is the latest summary and the instant it was read at,
// and the reading in flight, which the pages asking meanwhile wait for
// instead of reading it again: 200 page views at once read it once, not
// 200 times over the same pool.
type summaryCache struct {
	mu  sync.Mutex
	at  time.Time
	sum *summary
	// reading is closed when the reading in flight ends; nil when none is.
	reading chan struct{}
}

// summarize returns the summary at now: the one read less than
// summaryTTL before now (on the dashboard's clock), else a fresh one, read
// by this page or by the one already reading it. st is the status when the
// page has read it already (nil: read here).
func (d *Dashboard) summarize(ctx context.Context, now time.Time, st *Status) *summary {
	c := &d.summary
	for {
		c.mu.Lock()
		if c.sum != nil && !now.Before(c.at) && now.Sub(c.at) < summaryTTL {
			defer c.mu.Unlock()
			return c.sum
		}
		if c.reading == nil {
			done := make(chan struct{})
			c.reading = done
			c.mu.Unlock()
			sum := d.readSummary(ctx, now, st)
			c.mu.Lock()
			if sum.Error == "" {
				c.at, c.sum = now, sum
			}
			c.reading = nil
			close(done)
			c.mu.Unlock()
			return sum
		}
		reading := c.reading
		c.mu.Unlock()
		select {
		case <-reading: // read: fresh now, unless it failed (then read here)
		case <-ctx.Done():
			return &summary{Error: d.hidden(ctx, "summary", ctx.Err())}
		}
	}
}

// readSummary reads the summary at now from the database.
func (d *Dashboard) readSummary(ctx context.Context, now time.Time, st *Status) *summary {
	var errs []error
	if st == nil {
		s, err := ReadStatus(ctx, d.db, now, d.loc)
		if err != nil {
			return &summary{Error: d.hidden(ctx, "summary", err)}
		}
		st = &s
	}
	var out summary
	add := out.add
	d.tickerTrouble(&out, st, now)

	overdue, oldest, err := schedule.ReadOverdue(ctx, d.db, now, scheduleGrace)
	errs = append(errs, err)
	add("schedules-overdue", overdue, plural(overdue, "schedule overdue", "schedules overdue"),
		scheduleLateness(now.Sub(oldest)), "/schedules?only=overdue&sort=next")

	lists, parked, level := 0, 0, ""
	for _, l := range st.Lists {
		parked += l.Parked
		if l.OldestDue != nil {
			if lv := lateness(now.Sub(l.OldestDue.Time), listGrace, listRed); lv != "" {
				lists++
				level = worse(level, lv)
			}
		}
	}
	add("lists-behind", lists, plural(lists, "to-do list behind", "to-do lists behind"), level, "/lists?only=behind")
	add("items-parked", parked, plural(parked, "item parked", "items parked"), red, "/lists?only=parked")
	failingBy, err := todolist.ReadFailing(ctx, d.db)
	errs = append(errs, err)
	failing := 0
	for _, n := range failingBy {
		failing += n
	}
	add("items-failing", failing, plural(failing, "item failing", "items failing"), amber, "/lists?only=failing")

	counts, err := orchestration.CountInstances(ctx, d.db)
	errs = append(errs, err)
	add("workflows-stuck", counts[orchestration.Stuck], plural(counts[orchestration.Stuck], "workflow stuck", "workflows stuck"), red, "/workflows?state=stuck")
	add("workflows-failed", counts[orchestration.Failed], plural(counts[orchestration.Failed], "workflow failed", "workflows failed"), amber, "/workflows?state=failed")
	holders, err := sqldb.HorizonHolders(ctx, d.db, d.horizonGrace, 10)
	errs = append(errs, err)
	if len(holders) > 0 {
		oldest := holders[0]
		level := amber
		if oldest.Open > max(horizonRed, d.horizonGrace) {
			level = red
		}
		add("horizon-held", len(holders), plural(len(holders), "transaction holds", "transactions hold")+
			" every delivery back on PostgreSQL, the oldest "+oldest.String(), level, "/")
	}
	if err := errors.Join(errs...); err != nil {
		out.Error = d.hidden(ctx, "summary", err)
	}
	return &out
}

// tickerTrouble adds the ticker's trouble at now to out: its units
// behind, those failing to publish (WithTickerCounts), its lease expired.
func (d *Dashboard) tickerTrouble(out *summary, st *Status, now time.Time) {
	behind, level := 0, ""
	for _, u := range st.Units {
		if l := lateness(now.Sub(u.Next.Time), tickerGrace, tickerRed); l != "" {
			behind++
			level = worse(level, l)
		}
	}
	out.add("ticker-behind", behind, plural(behind, "ticker unit behind", "ticker units behind"), level, "/#units")
	if d.counts != nil {
		failing := 0
		for _, c := range d.counts() {
			if c.PublishFailures > 0 {
				failing++
			}
		}
		out.add("ticker-failing", failing, plural(failing, "ticker unit failing to publish", "ticker units failing to publish"), red, "/#units")
	}
	if l := st.Lease; l != nil && !l.Live {
		out.add("lease-expired", 1, "lease expired", worse(amber, lateness(now.Sub(l.Expires.Time), leaseGrace, leaseGrace)), "/#lease")
	}
}

// add counts n of a kind of trouble, when there are any and level says it
// is trouble.
func (s *summary) add(id string, n int, what, level, link string) {
	if n > 0 && level != "" {
		s.Items = append(s.Items, troubleItem{ID: id, Count: n, What: what, Level: level, Link: link})
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
