package zone_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/zone"
)

// bruteResolve finds, by looking at every second within 26 hours of the
// wall time, the instants whose wall clock shows it, and the first instant
// whose wall clock is past it after showing an earlier time.
func bruteResolve(wall time.Time, loc *time.Location) (hits []int64, after int64) {
	after = -1
	naive := wall.Unix()
	show := func(s int64) int64 {
		y, m, d := time.Unix(s, 0).In(loc).Date()
		h, mi, sec := time.Unix(s, 0).In(loc).Clock()
		return time.Date(y, m, d, h, mi, sec, 0, time.UTC).Unix()
	}
	prev := show(naive - zone.MaxOffset - 1)
	for s := naive - zone.MaxOffset; s <= naive+zone.MaxOffset; s++ {
		w := show(s)
		if w == naive {
			hits = append(hits, s)
		}
		if after < 0 && prev < naive && w > naive {
			after = s
		}
		prev = w
	}
	return hits, after
}

func TestResolveAgainstEverySecond(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		zone string
		wall string // local date and time, read as UTC
		n    int
	}{
		{"Europe/Warsaw", "2026-03-29T02:30:00Z", 0},
		{"Europe/Warsaw", "2026-03-29T03:00:00Z", 1},
		{"Europe/Warsaw", "2026-10-25T02:30:00Z", 2},
		{"Europe/Warsaw", "2026-10-25T03:00:00Z", 1},
		{"Europe/Warsaw", "2040-12-31T23:30:00Z", 1}, // where ZoneBounds' end is behind the instant
		{"America/New_York", "2026-03-08T02:00:00Z", 0},
		{"America/New_York", "2026-11-01T01:59:59Z", 2},
		{"Australia/Lord_Howe", "2026-10-04T02:15:00Z", 0},
		{"Australia/Lord_Howe", "2026-04-05T01:45:00Z", 2},
		{"Pacific/Apia", "2011-12-30T12:00:00Z", 0},
		{"America/Sao_Paulo", "2018-11-04T00:00:00Z", 0},
		{"Africa/Monrovia", "1972-01-07T00:30:00Z", 0},
		{"America/Juneau", "1867-10-18T18:00:00Z", 2}, // the clock went back a day
		{"America/Juneau", "1867-10-18T12:00:00Z", 1},
		{"UTC", "2026-01-01T00:00:00Z", 1},
	} {
		loc, err := time.LoadLocation(c.zone)
		require.NoError(t, err)
		wall, err := time.Parse(time.RFC3339, c.wall)
		require.NoError(t, err)
		hits, after := bruteResolve(wall, loc)
		first, second, n := zone.Resolve(wall.Unix(), loc)
		require.Equal(t, c.n, n, "%s %s", c.zone, c.wall)
		require.Len(t, hits, c.n, "%s %s: the reference disagrees with the case", c.zone, c.wall)
		switch n {
		case 0:
			require.Equal(t, after, first, "%s %s: first instant after the gap", c.zone, c.wall)
		case 1:
			require.Equal(t, hits[0], first, "%s %s", c.zone, c.wall)
		case 2:
			require.Equal(t, hits, []int64{first, second}, "%s %s", c.zone, c.wall)
		}
	}
}

func TestSegmentEndIsAlwaysAhead(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	for _, at := range []string{"2040-12-31T00:00:00Z", "2040-12-31T23:59:59Z", "2026-10-25T00:59:59Z"} {
		x, err := time.Parse(time.RFC3339, at)
		require.NoError(t, err)
		off, end := zone.Segment(x.Unix(), loc)
		require.Greater(t, end, x.Unix(), at)
		// The offset holds up to end and changes there, or end is a
		// place to look again from.
		_, o1 := time.Unix(end-1, 0).In(loc).Zone()
		require.Equal(t, int(off), o1, at)
	}
}
