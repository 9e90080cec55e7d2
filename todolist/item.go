package todolist

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/passage-of-time/passage/internal/names"
	"github.com/passage-of-time/passage/internal/sqldb"
)

// Limits on the text a list stores. They keep keys small enough to index
// well on both engines.
const (
	// MaxNameLength is the longest list name, in bytes.
	MaxNameLength = 200
	// MaxIDLength is the longest item ID, in bytes.
	MaxIDLength = 1000
)

// The instants the storage encoding (int64 Unix nanoseconds) can hold.
var (
	minTime = time.Unix(0, -1<<63).UTC()
	maxTime = time.Unix(0, 1<<63-1).UTC()
)

// Item is one entry of a list: an ID, the time it is due, and the
// bookkeeping of the processor.
type Item struct {
	// ID identifies the item within its list, e.g. an order ID.
	ID string
	// Due is the time the item falls due, in UTC.
	Due time.Time
	// NextAttempt is when the item may next be claimed: Due at first, the
	// end of the backoff after a failure, or the end of the lease while a
	// processor works it.
	NextAttempt time.Time
	// Attempts counts the failed attempts since the item was added (or
	// re-activated). Version conflicts do not count.
	Attempts int
	// LastError is the text of the latest failure, or "".
	LastError string
	// Parked is true once the item failed too often; the processor leaves
	// it alone until [List.Reactivate].
	Parked bool
	// Claimed is true while a processor holds the item: its lease had not
	// ended when the item was read (by the list's clock for [List.Get]).
	// NextAttempt is then the end of the lease, when the item comes back
	// if the processor died.
	Claimed bool
}

// validateName checks the name of a list to read: one that could have
// been created, or one named "." or "..", which earlier versions took.
func validateName(name string) error {
	if err := names.Check(name, MaxNameLength); err != nil && !errors.Is(err, names.ErrDotSegment) {
		return fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return nil
}

// validateNewName checks the name of a list [Open] may create
// (internal/names: the dashboard must be able to link to it).
func validateNewName(name string) error {
	if err := names.Check(name, MaxNameLength); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return nil
}

func validateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDLength:
		return fmt.Errorf("%w: %d bytes, at most %d allowed", ErrInvalidID, len(id), MaxIDLength)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidID, id)
	}
	for i := range len(id) {
		if id[i] == 0 {
			// PostgreSQL's TEXT cannot hold NUL.
			return fmt.Errorf("%w: %q contains a NUL byte", ErrInvalidID, id)
		}
	}
	return nil
}

func validateTime(what string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("%w: %s is the zero time", ErrInvalidTime, what)
	}
	if t.Before(minTime) || t.After(maxTime) {
		return fmt.Errorf("%w: %s %s is outside %d–%d", ErrInvalidTime, what, t.Format(time.RFC3339), minTime.Year(), maxTime.Year())
	}
	return nil
}

// nullTime decodes a nullable stored instant; NULL is the zero time.
func nullTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return sqldb.DecodeTime(v.Int64)
}

// scanItems reads rows of itemColumns as List.Get does, judging claims at
// now, and returns each item's page key too: its stored run_at, or due
// for parked items. (Item.NextAttempt is the lease's end for a claimed
// item, not run_at, so it cannot serve as the key.)
func scanItems(rows *sql.Rows, now time.Time, parked bool) ([]Item, []int64, error) {
	defer rows.Close()
	at := sqldb.EncodeTime(now)
	var items []Item
	var keys []int64
	for rows.Next() {
		var (
			it                       Item
			due, runAt, claimedUntil int64
			isParked                 int
			claim                    string
		)
		if err := rows.Scan(&it.ID, &due, &runAt, &it.Attempts, &it.LastError, &isParked, &claim, &claimedUntil); err != nil {
			return nil, nil, err
		}
		it.Parked, it.Claimed = isParked == 1, claim != "" && claimedUntil > at
		it.Due, it.NextAttempt = sqldb.DecodeTime(due), sqldb.DecodeTime(runAt)
		if it.Claimed {
			it.NextAttempt = sqldb.DecodeTime(max(runAt, claimedUntil))
		}
		items = append(items, it)
		if parked {
			keys = append(keys, due)
		} else {
			keys = append(keys, runAt)
		}
	}
	return items, keys, rows.Err()
}
