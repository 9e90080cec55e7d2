//go:build race

package orchestration

// The race detector allocates on its own: allocation counts are checked
// without it.
const raceEnabled = true
