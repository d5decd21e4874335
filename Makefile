# factline: two commands matter on a fresh machine.
#   make run    the main job: the demo suite on an embedded NATS server
#   make test   vet and every test, with the race detector
GO       ?= go
BIN      := bin/factline
PKGS     := ./...
BENCHTIME ?= 3s

.PHONY: all build run test vet fmt fmt-check bench fuzz faults clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/factline

run: build
	./$(BIN) run examples/demo/suite.yaml

vet:
	$(GO) vet $(PKGS)

test: vet fmt-check
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Benchmarks of the foundation: append throughput (both fsync modes, factline
# against raw JetStream) and loading one run among 100k facts. Results and
# the machine they ran on go into docs/benchmarks.md.
bench:
	$(GO) test -run '^$$' -bench 'Append|LoadRun' -benchtime $(BENCHTIME) ./bus/
	$(GO) test -run '^$$' -bench . -benchmem ./events/

# Fault tests that are not yet reliable enough for CI (see the issue notes):
# losing the FACTS stream leader of a three-node cluster mid-suite.
faults:
	$(GO) test -tags faults -count=1 -timeout 10m -run 'StreamLeader' -v ./integration/

# A short fuzz run of the fact decoder, on top of the checked-in corpus.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./events/

clean:
	rm -rf bin
