package orchestration

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
)

// PageQuery selects a page of instances for [ReadPage]: those whose ID
// starts with Prefix, in State, after the ID After, by ID.
type PageQuery struct {
	// Prefix keeps the instances whose ID starts with it ("" keeps all).
	Prefix string
	// State keeps the instances in that state ("" keeps all).
	State State
	// After is the ID the page starts after ("" from the first).
	After string
	// Limit is the most instances returned, 1 to MaxInstancesRead.
	Limit int
}

// ReadPage returns the page of instances q selects, by ID, and whether
// more follow, in one statement whatever the number of instances: the
// page's streams are picked by their first event (the prefix and the
// keyset on the (stream, version) index) and their state by the latest
// of their terminal events, as CountInstances counts them; then their
// histories are read whole and folded. [ReadInstances] reads every
// stream in turn and keeps those in the state asked for, which for a
// rare state reads every instance to fill a page.
func ReadPage(ctx context.Context, q sqlx.ExtContext, query PageQuery) ([]Status, bool, error) {
	if query.Limit <= 0 || query.Limit > MaxInstancesRead {
		return nil, false, fmt.Errorf("orchestration: read page: limit %d must be 1 to %d", query.Limit, MaxInstancesRead)
	}
	var terminal []string
	for typ := range terminalTypes {
		terminal = append(terminal, typ)
	}
	stateType := ""
	for typ, st := range terminalTypes {
		if st == query.State {
			stateType = typ
		}
	}
	if query.State != "" && query.State != Running && stateType == "" {
		return nil, false, fmt.Errorf("orchestration: read page: no state %q", query.State)
	}
	ok, err := hasEvents(ctx, q)
	if err != nil || !ok {
		return nil, false, wrapInspect("read page", err)
	}
	// The latest terminal event's type: NULL while the instance runs.
	latest := `(SELECT t.type FROM ` + eventsTable + ` t WHERE t.stream = s.stream AND t.type IN (?` + strings.Repeat(", ?", len(terminal)-1) + `) ORDER BY t.version DESC LIMIT 1)`
	where := []string{"s.version = 1", "s.stream > ?", "s.stream < ?"}
	args := []any{streamOf(query.After), "workflow0"}
	if query.Prefix != "" {
		// substr, not LIKE: SQLite's LIKE ignores ASCII case and an ID may
		// hold % or _; both count characters.
		where = append(where, "substr(s.stream, 1, ?) = ?")
		args = append(args, utf8.RuneCountInString(streamOf(query.Prefix)), streamOf(query.Prefix))
	}
	var stateArgs []any
	switch {
	case query.State == Running:
		where = append(where, latest+" IS NULL")
		stateArgs = append(stateArgs, stringArgs(terminal)...)
	case stateType != "":
		where = append(where, latest+" = ?")
		stateArgs = append(append(stateArgs, stringArgs(terminal)...), stateType)
	}
	// One row more than the page tells whether more follow.
	pick := `SELECT s.stream FROM ` + eventsTable + ` s WHERE ` + strings.Join(where, " AND ") + ` ORDER BY s.stream LIMIT ?`
	pickArgs := append(append(args, stateArgs...), query.Limit+1)
	rows, err := q.QueryContext(ctx, q.Rebind(`SELECT e.stream, e.version, e.type, e.data, e.recorded_at FROM `+eventsTable+` e
WHERE e.stream IN (`+pick+`) ORDER BY e.stream, e.version`), pickArgs...)
	if err != nil {
		return nil, false, wrapInspect("read page", err)
	}
	defer rows.Close()
	var (
		statuses []Status
		current  string
		history  []HistoryEvent
	)
	flush := func() {
		if current != "" {
			statuses = append(statuses, StatusOf(current, history))
		}
		history = history[:0]
	}
	for rows.Next() {
		var (
			stream, typ string
			version, at int64
			data        []byte
		)
		if err := rows.Scan(&stream, &version, &typ, &data, &at); err != nil {
			return nil, false, wrapInspect("read page", err)
		}
		if id := strings.TrimPrefix(stream, streamPrefix); id != current {
			flush()
			current = id
		}
		history = append(history, decodeHistoryEvent(typ, data, at, version))
	}
	if err := rows.Err(); err != nil {
		return nil, false, wrapInspect("read page", err)
	}
	flush()
	if len(statuses) > query.Limit {
		return statuses[:query.Limit], true, nil
	}
	return statuses, false, nil
}

func stringArgs(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
