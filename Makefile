# factline: two commands matter on a fresh machine.
#   make run    the main job: the demo suite on an embedded NATS server
#   make test   what the tests need (scripts/test-deps), then vet and every
#               test, with the race detector
GO       ?= go
BIN      := bin/factline
PKGS     := ./...

.PHONY: all build run external-agent test test-deps fresh-check vet fmt fmt-check bench bench-full bench-quick fuzz faults chaos soak view-shots image deploy-test jaeger clean

all: build

# -buildvcs=auto stamps the VCS revision (factline version, the agent
# identity) even where GOFLAGS turns stamping off.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/factline

run: build
	./$(BIN) run examples/demo/suite.yaml

# qwen-code, codex and claude-code from npm (installed once, as root, into
# /usr/local/lib/factline-agents) and factline's own loop on one case
# (examples/external-agent/README.md).
external-agent: build
	examples/external-agent/install.sh
	./$(BIN) run examples/external-agent/suite.yaml

vet:
	$(GO) vet $(PKGS)

# The tools the tests need come first: installed from Debian when this may
# (root, or sudo without a password), otherwise make stops here, before any
# test runs, naming each missing tool and the command that installs it.
#
# go test starts packages in the order it is given them, two at a time on
# a 2-core machine, and three packages take two thirds of the tests' CPU
# (integration ~450 s, cmd/factline ~300 s, services/runner ~180 s, each
# about one core): named first, they start at once and the short packages
# fill the other core around them, instead of the runner's tests running
# alone at the end (docs/operations.md#how-long-make-test-takes). The
# binary several packages' tests build (internal/testutil.GoBuild, same
# flags) is compiled once before them: on a fresh machine's empty build
# cache each test process would otherwise compile it in parallel with the
# others, the same work two or three times over.
LONG_PKGS := ./integration ./cmd/factline ./services/runner
test: test-deps
	$(MAKE) --no-print-directory vet fmt-check
	$(GO) build -buildvcs=false -o /dev/null ./cmd/factline
	$(GO) test -race -count=1 -timeout 30m $(LONG_PKGS) $(PKGS)

test-deps:
	@scripts/test-deps

# The two commands on a fresh machine: a new Debian root file system
# (debootstrap) with only Go, make and the CA certificates added, a clone of this
# repository's HEAD in it, and 'make run' and 'make test' run inside (as
# root, in a chroot). Minutes of downloads and the whole test suite; not
# part of make test. See scripts/fresh-check.
fresh-check:
	scripts/fresh-check

fmt:
	gofmt -w $$(git ls-files '*.go')

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The benchmark table (docs/benchmarks.md): one program, one embedded
# JetStream server per fsync mode, factline side by side with raw JetStream.
# It writes the table into docs/benchmarks.md. bench-quick is a smoke run
# with small counts that writes nothing.
BENCH_FLAGS ?=
bench: build
	$(GO) build -o bin/factline-bench ./cmd/factline-bench
	./bin/factline-bench --factline $(BIN) --out docs/benchmarks.md $(BENCH_FLAGS)

# Every row in both fsync modes (B6 with fsync always adds ~2.5 minutes).
bench-full: build
	$(GO) build -o bin/factline-bench ./cmd/factline-bench
	./bin/factline-bench --factline $(BIN) --b6-modes always,interval --out docs/benchmarks.md $(BENCH_FLAGS)

bench-quick: build
	$(GO) build -o bin/factline-bench ./cmd/factline-bench
	./bin/factline-bench --factline $(BIN) --reps 1 --facts 20000 --b2-runs 20 --b3-turns 10 --b6-runs 200 --b1-rounds-always 1 --b1-rounds-interval 3 --b5-loads 50 --b7-runs 1,4,16 --b7-turns 3 --b8-turns 49

# The fault-injection tests (also part of make test), three times over with
# the race detector, to shake out the rare interleavings one pass misses:
# processes killed, a stream leader lost, messages twice, slow consumers,
# and the bus itself failing (server restarts, a rolling cluster restart,
# a full store), then the bus's own tests of those failures.
faults:
	$(GO) test -race -count=3 -timeout 40m -run 'TestFault' -v ./integration/
	$(GO) test -race -count=3 -timeout 10m -run 'TestBusFailures|TestADeadLetterWaits|TestAGiveUp|TestQueuedDeliveries|TestAControl|TestControlOutlives|TestALostControl|TestAFullStore' ./bus/

# The chaos campaign (docs/operations.md#the-chaos-campaign): the fault
# suite on a three-node nats-server cluster under runner processes behind
# proxies, each seed a schedule of faults (runner processes killed and cut
# off right after an intent, during a settle, during a seal; nodes killed,
# stopped, restarted in turn; a full store). SEEDS seeds from FIRST (default:
# drawn from the clock), or one SEED to replay; one line per seed: seed,
# runs, faults injected, violations. make test runs one seed.
SEEDS ?= 5
chaos:
	FACTLINE_CHAOS_SEEDS=$(SEEDS) FACTLINE_CHAOS_FIRST=$(FIRST) FACTLINE_CHAOS_SEED=$(SEED) \
		$(GO) test -count=1 -timeout $$(( $(SEEDS) * 6 + 10 ))m -run 'TestChaos$$' -v ./integration/

# The bounded soak: 1,000 short scripted runs through two runner processes
# (at most ten minutes, loopback only); prints the rate held, redeliveries,
# conflicts and peak RSS per process for docs/operations.md.
soak:
	$(GO) test -tags soak -count=1 -timeout 15m -run 'TestSoak' -v ./integration/

# A short fuzz run of the fact decoder, on top of the checked-in corpus.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./events/

# Screenshots of the viewer's three main pages (docs/viewer-*.png, shown in
# the README and docs/viewer.md): the demo suite run on an embedded server,
# shown in headless chromium (Debian's chromium package).
view-shots:
	FACTLINE_VIEW_SHOTS=$(CURDIR)/docs $(GO) test -count=1 -run 'TestBrowserScreenshotsOfTheThreeMainPages' -v ./view/

# factline's container images, built here with nothing pulled
# (docs/deploy.md): localhost/factline (the static binary on scratch, with
# busybox and bash for cases' commands), localhost/factline-nats and
# localhost/factline-prometheus, each tagged with the checkout's revision
# and latest. CONTAINER_ENGINE=docker builds them with docker.
CONTAINER_ENGINE ?= podman
image:
	FACTLINE_CONTAINER_ENGINE=$(CONTAINER_ENGINE) deploy/build-images.sh

# The deployment's tests that take minutes (docs/deploy.md#tests): the
# image names its build; the compose fleet (three NATS nodes, the five
# services, Prometheus) finishes a suite through a NATS node and a runner
# killed, and leaves nothing behind; the Kubernetes manifests' pods finish
# a suite under podman kube play; factline trace's spans as a real Jaeger
# stores them (its first build takes many minutes: make jaeger). .ci/run
# runs this after make test; the manifests' strict decoding is part of
# make test.
deploy-test: test-deps
	$(GO) test -tags deploy -count=1 -timeout 40m -v -run 'TestDeploy' ./deploy/
	$(GO) test -tags deploy -count=1 -timeout 90m -v -run 'Jaeger|TestTraceFollow' ./cmd/factline/
# Jaeger's all-in-one, the OTLP receiver the trace tests send to, built
# from its own module (tools/jaeger) into tools/jaeger/.cache, where the
# tests find it (docs/traces.md). The tests build it themselves when it
# is missing; this builds it ahead, since it takes minutes.
jaeger:
	cd tools/jaeger && h=$$(cat go.mod go.sum | sha256sum | cut -c1-16) && mkdir -p .cache && \
	  { [ -x .cache/jaeger-$$h ] || $(GO) build -buildvcs=false -o .cache/jaeger-$$h github.com/jaegertracing/jaeger/cmd/jaeger; }

clean:
	rm -rf bin
