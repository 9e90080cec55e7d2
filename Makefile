# Run `make help` for the targets.
.PHONY: help test test-race docs bench bench-peers lint fmt

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

test: ## run the tests (the README's command)
	go test ./...

test-race: ## run the tests under the race detector
	go test -race ./...

docs: ## check that the README's and docs/'s ticker examples print what they show
	go test -count=1 -run 'TestDocsExamples' ./cmd/ticker

bench: ## run every benchmark with allocation figures
	go test -run '^$$' -bench . -benchmem ./...

bench-peers: ## passage beside River, gocron, Watermill, EventBus, go-workflows: a table of ratios (bench/, own module)
	cd bench && go run .

lint: ## gofmt check, go vet and staticcheck (installed on demand)
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt needed"; exit 1)
	go vet ./...
	go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	$$(go env GOPATH)/bin/staticcheck ./...

fmt: ## format the code
	gofmt -w .
