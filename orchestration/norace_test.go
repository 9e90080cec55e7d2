//go:build !race

package orchestration

const raceEnabled = false
