// Command workflowcheck reports non-deterministic code in orchestration
// workflow functions. Run it as a vet tool:
//
//	go install github.com/passage-of-time/passage/cmd/workflowcheck
//	go vet -vettool=$(go env GOPATH)/bin/workflowcheck ./...
//
// See package github.com/passage-of-time/passage/orchestration/workflowcheck
// for what it reports and why.
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/passage-of-time/passage/orchestration/workflowcheck"
)

func main() { singlechecker.Main(workflowcheck.Analyzer) }
