# factline: two commands matter on a fresh machine.
#   make run    the main job: the demo suite on an embedded NATS server
#   make test   vet and every test, with the race detector
GO       ?= go
BIN      := bin/factline
PKGS     := ./...
BENCHTIME ?= 3s

.PHONY: all build run test vet fmt fmt-check bench fuzz faults soak clean

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

# The fault-injection tests (also part of make test), three times over with
# the race detector, to shake out the rare interleavings one pass misses.
faults:
	$(GO) test -race -count=3 -timeout 20m -run 'TestFault' -v ./integration/

# The bounded soak: 1,000 short scripted runs through two runner processes
# (at most ten minutes, loopback only); prints the rate held, redeliveries,
# conflicts and peak RSS per process for docs/operations.md.
soak:
	$(GO) test -tags soak -count=1 -timeout 15m -run 'TestSoak' -v ./integration/

# A short fuzz run of the fact decoder, on top of the checked-in corpus.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./events/

clean:
	rm -rf bin
