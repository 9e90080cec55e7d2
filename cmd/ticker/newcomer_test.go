package main_test

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestWhatANewcomerMeets runs testdata/newcomer: each script is a finding
// of a new user on a fresh clone (issue 35), run against the binary as
// they ran it.
func TestWhatANewcomerMeets(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/newcomer",
		Setup: func(e *testscript.Env) error {
			e.Setenv("PASSAGE_DB", "")
			e.Setenv("TZ", "UTC")
			return nil
		},
	})
}
