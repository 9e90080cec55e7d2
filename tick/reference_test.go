package tick_test

import (
	"archive/zip"
	"bufio"
	"fmt"
	"go/build"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passage-of-time/passage/tick"
)

// This file checks Next, Previous and Boundaries against a reference that
// shares nothing with the package: it steps through UTC and watches the
// local wall clock that the standard library shows for each instant. Only
// the offsets of the zone database are trusted, not its zone bounds, which
// misbehave after a zone's last listed transition.
//
// The default run checks a few thousand cases in seconds; more run with
//
//	PASSAGE_TICK_PROPERTY=200000 go test ./tick -run TestBoundariesAgainstWallClock -timeout 60m
//
// (a number of random cases) or PASSAGE_TICK_PROPERTY=all (every zone of
// both zone databases, every unit, every offset change and every new year
// from 1800 to 2200: hours on two cores). PASSAGE_TICK_PROPERTY_SEED
// changes the random cases.

const (
	firstYear = 1800
	lastYear  = 2200
)

// TestBoundariesAgainstWallClock checks, for zones of the system's zone
// database and of Go's embedded copy, for every unit, at instants around
// offset changes and new years between 1800 and 2200, that Previous and
// Next bracket the instant with reference boundaries, that no reference
// boundary lies between two consecutive results (none skipped) and that
// each result is one (none invented). Every call must return: a case that
// makes no progress for ten seconds fails the test, naming it.
func TestBoundariesAgainstWallClock(t *testing.T) {
	t.Parallel()
	zones := referenceZones(t)
	mode := os.Getenv("PASSAGE_TICK_PROPERTY")
	seed := uint64(20261123)
	if s := os.Getenv("PASSAGE_TICK_PROPERTY_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PASSAGE_TICK_PROPERTY_SEED=%q: %v", s, err)
		}
	}

	cases := make(chan refCase, 64)
	go func() {
		defer close(cases)
		for _, c := range knownHardCases(t, zones) {
			cases <- c
		}
		switch mode {
		case "all":
			for _, z := range zones {
				for y := firstYear; y <= lastYear; y++ {
					for _, at := range instantsOfYear(z.loc, y) {
						for _, u := range tick.Units() {
							cases <- refCase{z, u, at}
						}
					}
				}
			}
		default:
			n := 2000
			if mode != "" {
				var err error
				if n, err = strconv.Atoi(mode); err != nil || n < 0 {
					panic(fmt.Sprintf("PASSAGE_TICK_PROPERTY=%q: want a number of cases or \"all\"", mode))
				}
			} else if testing.Short() {
				n = 200
			}
			rng := rand.New(rand.NewPCG(seed, seed))
			for i := 0; i < n; {
				z := zones[rng.IntN(len(zones))]
				y := firstYear + rng.IntN(lastYear-firstYear+1)
				ats := instantsOfYear(z.loc, y)
				at := ats[rng.IntN(len(ats))]
				for _, u := range tick.Units() {
					cases <- refCase{z, u, at}
				}
				i += len(tick.Units())
			}
		}
	}()

	workers := 1
	if mode != "" {
		workers = max(1, min(4, runtime.NumCPU()))
	}
	var (
		checked atomic.Int64
		mu      sync.Mutex
		current = make([]refCase, workers)
		failed  []string
		done    = make(chan struct{})
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range cases {
				mu.Lock()
				current[w] = c
				mu.Unlock()
				if msg := checkAgainstReference(c); msg != "" {
					mu.Lock()
					failed = append(failed, msg)
					mu.Unlock()
				}
				checked.Add(1)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	start := time.Now()
	last, lastAt := int64(-1), time.Now()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(time.Second):
			if n := checked.Load(); n != last {
				last, lastAt = n, time.Now()
			} else if time.Since(lastAt) > 10*time.Second {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("no case finished for 10 s: a boundary computation does not return; running: %v", current)
			}
		}
		mu.Lock()
		if len(failed) >= 20 {
			running = false
		}
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, msg := range failed {
		t.Error(msg)
	}
	t.Logf("%d cases (%d zones, units %v, years %d-%d, seed %d) in %s",
		checked.Load(), len(zones), tick.Units(), firstYear, lastYear, seed, time.Since(start).Round(time.Millisecond))
}

type refZone struct {
	source, name string
	loc          *time.Location
}

type refCase struct {
	zone refZone
	unit tick.Unit
	at   time.Time
}

func (c refCase) String() string {
	return fmt.Sprintf("%s %s (%s) at %s", c.unit, c.zone.name, c.zone.source, c.at.UTC().Format(time.RFC3339Nano))
}

// checkAgainstReference returns what is wrong with the package's answers
// for c, or "".
func checkAgainstReference(c refCase) string {
	u, loc, at := c.unit, c.zone.loc, c.at
	prev := tick.Previous(u, at, loc)
	next := tick.Next(u, at, loc)
	if prev.After(at) || !next.After(at) {
		return fmt.Sprintf("%v: Previous %s and Next %s do not bracket it", c, prev, next)
	}
	next2 := tick.Next(u, next, loc)
	if !next2.After(next) {
		return fmt.Sprintf("%v: Next(%s) = %s is not after it", c, next, next2)
	}
	if prev.Nanosecond() != 0 || next.Nanosecond() != 0 || next2.Nanosecond() != 0 {
		return fmt.Sprintf("%v: boundaries %s, %s, %s are not whole seconds", c, prev, next, next2)
	}
	want := referenceBoundaries(u, loc, prev.Unix()-1, next2.Unix())
	got := []int64{prev.Unix(), next.Unix(), next2.Unix()}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("%v: Previous, Next, Next of that = %s; the wall clock's boundaries from the first to the last are %s",
			c, formatUnix(got, loc), formatUnix(want, loc))
	}
	if p := tick.Previous(u, next, loc); !p.Equal(next) {
		return fmt.Sprintf("%v: Previous(%s), a boundary, is %s", c, next, p)
	}
	if p := tick.Previous(u, next.Add(-time.Nanosecond), loc); !p.Equal(prev) {
		return fmt.Sprintf("%v: Previous(1ns before %s) is %s, want %s", c, next, p, prev)
	}
	var yielded []int64
	for b := range tick.Boundaries(u, prev, next2, loc) {
		yielded = append(yielded, b.Unix())
	}
	if !slices.Equal(yielded, want[1:]) {
		return fmt.Sprintf("%v: Boundaries(%s, %s] yields %s, want %s", c, prev, next2, formatUnix(yielded, loc), formatUnix(want[1:], loc))
	}
	return ""
}

// referenceBoundaries returns the boundaries of u in (from, to] (Unix
// seconds: offsets are whole seconds, so boundaries are too), by the
// definitions in the package doc applied to the wall clock:
//   - minute, hour: every second at which the wall clock shows :SS = 00,
//     or MM:SS = 00:00;
//   - day to year: every second whose local day, ISO week, month, quarter
//     or year is later than at any earlier second — its first instant,
//     once, however often a fall-back shows it again.
func referenceBoundaries(u tick.Unit, loc *time.Location, from, to int64) []int64 {
	var out []int64
	wall := func(s int64) time.Time { return time.Unix(s, 0).In(loc) }
	if u == tick.Minute || u == tick.Hour {
		for s := from + 1; s <= to; s++ {
			lt := wall(s)
			if lt.Second() == 0 && (u == tick.Minute || lt.Minute() == 0) {
				out = append(out, s)
			}
		}
		return out
	}
	key := func(lt time.Time) int {
		y, m, d := lt.Date()
		switch u {
		case tick.Day:
			return y*400 + int(m)*32 + d
		case tick.Week:
			wy, w := lt.ISOWeek()
			return wy*60 + w
		case tick.Month:
			return y*12 + int(m)
		case tick.Quarter:
			return y*4 + (int(m)-1)/3
		}
		return y
	}
	// Probe every hour; where the offset or the period differs between two
	// probes, look at every second between them. No zone changes its
	// offset and back within an hour, and within one offset the wall clock
	// runs forward, so nothing happens between equal probes. Start three
	// days early: a fall-back (Alaska went back a whole day in 1867) can
	// show a period again that began before from.
	const probe = 3600
	x := from - 3*86400
	lx := wall(x)
	highest := key(lx)
	_, offX := lx.Zone()
	for x < to {
		y := min(x+probe, to)
		ly := wall(y)
		_, offY := ly.Zone()
		if offY != offX || key(ly) != key(lx) {
			for s := x + 1; s <= y; s++ {
				if k := key(wall(s)); k > highest {
					highest = k
					if s > from {
						out = append(out, s)
					}
				}
			}
		}
		x, lx, offX = y, ly, offY
	}
	return out
}

func formatUnix(ss []int64, loc *time.Location) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = time.Unix(s, 0).In(loc).Format("2006-01-02T15:04:05Z07:00:00 MST")
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// instantsOfYear returns the instants of year y worth checking in loc:
// around each offset change (found by stepping through the year a day at a
// time, then to the second) and around the new year, local and UTC.
func instantsOfYear(loc *time.Location, y int) []time.Time {
	var out []time.Time
	offsetAt := func(s int64) int {
		_, o := time.Unix(s, 0).In(loc).Zone()
		return o
	}
	from := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	to := time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for lo := from; lo < to; lo += 86400 {
		hi := lo + 86400
		if offsetAt(lo) == offsetAt(hi) {
			continue
		}
		a, b := lo, hi
		for b-a > 1 {
			mid := a + (b-a)/2
			if offsetAt(mid) == offsetAt(a) {
				a = mid
			} else {
				b = mid
			}
		}
		change := time.Unix(b, 0).In(loc)
		out = append(out, change.Add(-time.Nanosecond), change, change.Add(30*time.Minute))
	}
	utcNewYear := time.Unix(to, 0).In(loc)
	localDec31 := time.Date(y, 12, 31, 12, 0, 0, 0, loc)
	out = append(out,
		utcNewYear.Add(-12*time.Hour), utcNewYear.Add(-time.Second), utcNewYear,
		localDec31, localDec31.Add(12*time.Hour-time.Nanosecond), localDec31.Add(12*time.Hour))
	return out
}

// knownHardCases are the instants that broke or could break the
// arithmetic: the spins of issue 12, dates without a midnight, skipped
// dates, local mean time, half-hour DST and a day-long fall-back.
func knownHardCases(t testing.TB, zones []refZone) []refCase {
	var out []refCase
	add := func(zone, at string) {
		for _, z := range zones {
			if z.name != zone {
				continue
			}
			ts, err := time.Parse(time.RFC3339, at)
			if err != nil {
				panic(err)
			}
			for _, u := range tick.Units() {
				out = append(out, refCase{z, u, ts})
			}
		}
	}
	add("Europe/Warsaw", "2026-01-01T00:00:00Z")
	add("Europe/Warsaw", "2040-12-31T12:00:00Z")
	add("Europe/Warsaw", "2024-12-31T12:00:00Z")
	add("Europe/Warsaw", "2028-12-31T23:30:00Z")
	add("America/New_York", "2196-12-31T20:00:00Z")
	add("Australia/Sydney", "2040-12-31T12:00:00Z")
	add("Pacific/Apia", "2011-12-30T09:59:59Z")
	add("America/Sao_Paulo", "2018-11-04T02:30:00Z")
	add("Africa/Monrovia", "1972-01-07T00:44:29Z")
	add("Australia/Lord_Howe", "2026-10-03T15:30:00Z")
	add("Asia/Kathmandu", "1985-12-31T18:29:59Z")
	add("America/Juneau", "1867-10-19T00:00:00Z")
	if len(out) == 0 {
		t.Log("none of the known hard zones is in the zone databases")
	}
	return out
}

// referenceZones loads every zone of the system's zone database (the names
// of tzdata.zi) and of Go's embedded copy ($GOROOT/lib/time/zoneinfo.zip,
// what a binary importing time/tzdata carries), whose listed transitions
// stop earlier, so its zones follow their POSIX rules from the 2000s on.
func referenceZones(t testing.TB) []refZone {
	t.Helper()
	var zones []refZone
	if f, err := os.Open("/usr/share/zoneinfo/tzdata.zi"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Z "); ok {
				name := strings.Fields(rest)[0]
				loc, err := time.LoadLocation(name)
				if err != nil {
					t.Fatalf("load %s: %v", name, err)
				}
				zones = append(zones, refZone{"system", name, loc})
			}
		}
		_ = f.Close()
	} else {
		t.Logf("no system zone database (%v): checking Go's embedded copy only", err)
	}
	zipPath := filepath.Join(build.Default.GOROOT, "lib", "time", "zoneinfo.zip")
	if r, err := zip.OpenReader(zipPath); err == nil {
		for _, f := range r.File {
			if f.FileInfo().IsDir() || !strings.Contains(f.Name, "/") {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatalf("open %s in %s: %v", f.Name, zipPath, err)
			}
			data, err := io.ReadAll(rc)
			_ = rc.Close()
			if err != nil {
				t.Fatalf("read %s in %s: %v", f.Name, zipPath, err)
			}
			loc, err := time.LoadLocationFromTZData(f.Name, data)
			if err != nil {
				t.Fatalf("load %s from %s: %v", f.Name, zipPath, err)
			}
			zones = append(zones, refZone{"embedded", f.Name, loc})
		}
		_ = r.Close()
	} else {
		t.Logf("no Go zoneinfo.zip at %s (%v): checking the system zone database only", zipPath, err)
	}
	if len(zones) == 0 {
		t.Skip("neither the system zone database nor Go's zoneinfo.zip is available")
	}
	return zones
}

// FuzzBoundariesAgainstWallClock checks random zones (of both zone
// databases), units and instants from 1800 to 2200 against the wall-clock
// reference. Its seeds, the known hard cases, run with every `go test`;
//
//	go test ./tick -run '^$' -fuzz FuzzBoundariesAgainstWallClock -fuzztime 60s
//
// explores further. An input whose computation does not return within ten
// seconds fails.
func FuzzBoundariesAgainstWallClock(f *testing.F) {
	zones := referenceZones(f)
	index := func(z refZone) uint16 {
		return uint16(slices.IndexFunc(zones, func(o refZone) bool { return o == z }))
	}
	units := tick.Units()
	span := time.Date(lastYear+1, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - time.Date(firstYear, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	origin := time.Date(firstYear, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, c := range knownHardCases(f, zones) {
		f.Add(index(c.zone), c.at.Unix()-origin, uint8(slices.Index(units, c.unit)), uint32(c.at.Nanosecond()))
	}
	f.Fuzz(func(t *testing.T, zone uint16, offset int64, unit uint8, nanos uint32) {
		c := refCase{
			zone: zones[int(zone)%len(zones)],
			unit: units[int(unit)%len(units)],
			at:   time.Unix(origin+(offset%span+span)%span, int64(nanos%1e9)),
		}
		result := make(chan string, 1)
		go func() { result <- checkAgainstReference(c) }()
		select {
		case msg := <-result:
			if msg != "" {
				t.Fatal(msg)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: no answer within 10 s", c)
		}
	})
}
