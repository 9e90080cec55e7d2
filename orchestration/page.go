package orchestration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
)

// PageSort orders a [PageQuery]'s instances; each order ends with the
// ID, so pages never overlap.
type PageSort string

const (
	// ByID orders by ID (byte order), the default: the only order that
	// pages by keyset (After).
	ByID PageSort = "id"
	// ByState orders by state, the worst first: stuck, failed, running,
	// cancelled, completed.
	ByState PageSort = "state"
	// ByStarted orders by when the first event was recorded, newest
	// first.
	ByStarted PageSort = "started"
	// ByUpdated orders by when the latest event was recorded, newest
	// first.
	ByUpdated PageSort = "updated"
)

// stateRanks are the states in ByState's order: a running instance has
// no terminal event, so its rank is the CASE's ELSE.
var stateRanks = []State{Stuck, Failed, Running, Cancelled, Completed}

// PageQuery selects a page of instances for [ReadPage]: those whose ID
// starts with Prefix, in State, in the order Sort, after the ID After
// (by ID) or past Offset of them (in any order).
type PageQuery struct {
	// Prefix keeps the instances whose ID starts with it ("" keeps all).
	Prefix string
	// State keeps the instances in that state ("" keeps all).
	State State
	// Sort orders them (ByID when "").
	Sort PageSort
	// After is the ID the page starts after ("" from the first); only
	// with ByID.
	After string
	// Offset skips that many, in any order.
	Offset int
	// Limit is the most instances returned, 1 to MaxInstancesRead.
	Limit int
}

// ReadPage returns the page of instances q selects, in its order, and
// whether more follow, in one statement whatever the number of
// instances: the page's streams are picked by their first event (the
// prefix and the keyset on the (stream, version) index), their state by
// the latest of their terminal events, as CountInstances counts them,
// and their sort key (a subquery for the state and the latest event);
// then their histories are read whole and folded. Orders other than
// ByID sort every instance the filter keeps, and page by offset. [ReadInstances] reads every
// stream in turn and keeps those in the state asked for, which for a
// rare state reads every instance to fill a page.
func ReadPage(ctx context.Context, q sqlx.ExtContext, query PageQuery) ([]Status, bool, error) {
	sort := query.Sort
	if sort == "" {
		sort = ByID
	}
	switch {
	case query.Limit <= 0 || query.Limit > MaxInstancesRead:
		return nil, false, fmt.Errorf("orchestration: read page: limit %d must be 1 to %d", query.Limit, MaxInstancesRead)
	case query.Offset < 0:
		return nil, false, fmt.Errorf("orchestration: read page: offset %d must not be negative", query.Offset)
	case !slices.Contains([]PageSort{ByID, ByState, ByStarted, ByUpdated}, sort):
		return nil, false, fmt.Errorf("orchestration: read page: no sort %q: want id, state, started or updated", query.Sort)
	case query.After != "" && sort != ByID:
		return nil, false, fmt.Errorf("orchestration: read page: after %q pages by ID, not by %s: use an offset", query.After, sort)
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
	// The page's sort key, k, picked with each stream; ByID needs none
	// (0), so that its page walks the index.
	key, keyArgs, desc := `0`, []any(nil), ""
	switch sort {
	case ByState:
		key = `CASE ` + latest
		keyArgs = stringArgs(terminal)
		for rank, st := range stateRanks {
			for typ, ts := range terminalTypes {
				if ts == st {
					key += ` WHEN ? THEN ` + strconv.Itoa(rank)
					keyArgs = append(keyArgs, typ)
				}
			}
		}
		key += ` ELSE ` + strconv.Itoa(slices.Index(stateRanks, Running)) + ` END`
	case ByStarted:
		key, desc = `s.recorded_at`, " DESC"
	case ByUpdated:
		key, desc = `(SELECT u.recorded_at FROM `+eventsTable+` u WHERE u.stream = s.stream ORDER BY u.version DESC LIMIT 1)`, " DESC"
	}
	inner, outer := `k`+desc+`, s.stream`, `p.k`+desc+`, p.stream`
	if sort == ByID {
		inner, outer = `s.stream`, `p.stream`
	}
	// One row more than the page tells whether more follow.
	pick := `SELECT s.stream, ` + key + ` AS k FROM ` + eventsTable + ` s WHERE ` + strings.Join(where, " AND ") + ` ORDER BY ` + inner + ` LIMIT ? OFFSET ?`
	pickArgs := append(append(append(keyArgs, args...), stateArgs...), query.Limit+1, query.Offset)
	rows, err := q.QueryContext(ctx, q.Rebind(`SELECT e.stream, e.version, e.type, e.data, e.recorded_at FROM (`+pick+`) p
JOIN `+eventsTable+` e ON e.stream = p.stream ORDER BY `+outer+`, e.version`), pickArgs...)
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
