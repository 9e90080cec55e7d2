package tick

import "time"

// tenth is a 100 ms unit, so real-clock tests and benchmarks see dozens of
// boundaries in seconds.
const tenth Unit = "tenth"

func init() { fixedUnits[tenth] = 100 * time.Millisecond }

// setCursorBatch lets benchmarks compare cursor write batch sizes.
func setCursorBatch(n int) (restore func()) {
	old := cursorBatch
	cursorBatch = n
	return func() { cursorBatch = old }
}
