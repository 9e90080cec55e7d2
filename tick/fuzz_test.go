package tick

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// zoneNames lists the zones of the system's zone database (tzdata.zi),
// falling back to a handful when the file is missing.
var zoneNames = sync.OnceValue(func() []string {
	names := []string{"UTC", "Europe/Warsaw", "America/New_York", "Asia/Kolkata", "Asia/Kathmandu",
		"Australia/Lord_Howe", "America/Sao_Paulo", "Pacific/Apia", "Africa/Monrovia", "Pacific/Chatham"}
	f, err := os.Open("/usr/share/zoneinfo/tzdata.zi")
	if err != nil {
		return names
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "Z "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
})

var (
	fuzzFrom = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	fuzzTo   = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

// FuzzBoundaries checks the boundary arithmetic's invariants for random
// zones, instants between 1970 and 2100 and units. Its seeds (the dates of
// TestBoundaries) run with every `go test`; `go test -fuzz FuzzBoundaries`
// explores further.
func FuzzBoundaries(f *testing.F) {
	names := zoneNames()
	seed := func(zone, at string) {
		i := slices.Index(names, zone)
		require.GreaterOrEqual(f, i, 0, zone)
		ts, err := time.Parse(time.RFC3339, at)
		require.NoError(f, err)
		for u := range Units() {
			f.Add(uint16(i), ts.Unix()-fuzzFrom, uint8(u), int32(ts.Nanosecond()))
		}
	}
	seed("UTC", "2028-02-29T12:00:00Z")
	seed("Europe/Warsaw", "2026-03-29T01:30:00+01:00")
	seed("Europe/Warsaw", "2026-10-25T02:30:00+01:00")
	seed("America/New_York", "2026-03-08T01:59:59-05:00")
	seed("America/New_York", "2026-11-01T01:30:00-04:00")
	seed("Asia/Kolkata", "2026-12-31T18:30:00Z")
	seed("Asia/Kathmandu", "2026-05-01T10:10:00+05:45")
	seed("Australia/Lord_Howe", "2026-04-05T01:45:00+10:30")
	seed("Australia/Lord_Howe", "2026-10-04T01:59:00+10:30")
	seed("America/Sao_Paulo", "2018-11-04T00:30:00-02:00")
	seed("Pacific/Apia", "2011-12-29T23:59:59-10:00")
	seed("Africa/Monrovia", "1972-01-06T23:59:59-00:44")

	f.Fuzz(func(t *testing.T, zone uint16, offset int64, unit uint8, nanos int32) {
		loc := mustLoad(t, names[int(zone)%len(names)])
		span := fuzzTo - fuzzFrom
		at := time.Unix(fuzzFrom+(offset%span+span)%span, int64(nanos)%1e9&0x3fffffff).In(loc)
		u := Units()[int(unit)%len(Units())]
		checkBoundaryInvariants(t, u, at, loc)
		// Random instants rarely land on a DST change; also check the
		// changes around this one, where the arithmetic is hardest.
		start, end := at.ZoneBounds()
		for _, x := range []time.Time{start, end} {
			if !x.IsZero() && x.Unix() > fuzzFrom && x.Unix() < fuzzTo {
				checkBoundaryInvariants(t, u, x, loc)
				checkBoundaryInvariants(t, u, x.Add(-time.Nanosecond), loc)
			}
		}
	})
}

func checkBoundaryInvariants(t *testing.T, u Unit, at time.Time, loc *time.Location) {
	prev, next := Previous(u, at, loc), Next(u, at, loc)
	require.False(t, prev.After(at), "%s previous %v after %v", u, prev, at)
	require.True(t, next.After(at), "%s next %v not after %v", u, next, at)
	require.True(t, Next(u, next, loc).After(next), "%s boundaries strictly increase", u)
	require.True(t, Next(u, prev, loc).Equal(next), "%s next(previous(t)) = next(t) at %v", u, at)
	require.True(t, Previous(u, next, loc).Equal(next), "%s a boundary is its own previous", u)
	require.True(t, Previous(u, next.Add(-time.Nanosecond), loc).Equal(prev), "%s previous just before next", u)

	for _, b := range []time.Time{prev, next} {
		lb := b.In(loc)
		switch u {
		case Minute:
			require.Zero(t, lb.Second()+lb.Nanosecond(), "%v is not on a minute", lb)
		case Hour:
			require.Zero(t, lb.Minute()+lb.Second()+lb.Nanosecond(), "%v is not on an hour", lb)
		default:
			// The first instant of its period: the instant before is in an
			// earlier one.
			before := periodOf(u, b.Add(-time.Nanosecond).In(loc)).date
			require.True(t, before.Before(periodOf(u, lb).date), "%s %v is not the first instant of its period", u, lb)
		}
	}
	if u != Day {
		return
	}
	// Exactly one day boundary per local date: consecutive boundaries fall
	// on consecutive dates, except dates the zone skipped entirely, whose
	// first instant is the next boundary.
	d1, d2 := periodOf(Day, prev.In(loc)), periodOf(Day, next.In(loc))
	for d := d1.next(Day); d.date.Before(d2.date); d = d.next(Day) {
		require.True(t, d.start(loc).Equal(next), "date %v between day boundaries %v and %v exists", d.date, prev, next)
	}
	// The hours of the day number what its real length says: 24 for 24 h,
	// 23 or 25 across DST, floor or ceiling of a fractional length.
	hours := 0
	for range Boundaries(Hour, prev.Add(-time.Nanosecond), next.Add(-time.Nanosecond), loc) {
		hours++
	}
	length := next.Sub(prev).Hours()
	require.Less(t, abs(float64(hours)-length), 1.0, "day %v lasts %.2f h but has %d hour boundaries", prev, length, hours)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
