package workflowcheck_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/passage-of-time/passage/orchestration/workflowcheck"
)

// TestAnalyzer runs the analyzer over the samples in testdata/src/a: each
// rule broken in a workflow declaration, a workflow literal, a closure and a
// workflow method; nothing in Step and Compensate bodies, plain functions or
// methods that share a name; time imported as t.
func TestAnalyzer(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "a")
}

// TestDotImportAndAlias covers time imported with a dot and a workflow whose
// Context is named through a type alias.
func TestDotImportAndAlias(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "dot")
}

// TestOrchestrationPackageSkipped checks that the engine's own functions,
// which take a Context first, are not taken for workflows.
func TestOrchestrationPackageSkipped(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer,
		"github.com/passage-of-time/passage/orchestration")
}

// TestFollowsCalls covers calls from workflows to helpers that break the
// rules, and the facts the helpers get: in the same package, in another, two
// packages away, through a method, a generic function and recursion; not
// from Step bodies or plain functions, nor into the standard library or a
// package with a path like its.
func TestFollowsCalls(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer,
		"example.com/shop", "example.com/shop/pricing", "example.com/shop/clock")
}

// TestPatches covers the checks of orchestration.Patched and
// DeprecatePatch: ids not constant, empty or asked twice in a workflow
// (a closure's count, another workflow's do not), an answer dropped, and
// calls in Step and Compensate bodies; a loop and constant expressions
// are fine.
func TestPatches(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "patches")
}
