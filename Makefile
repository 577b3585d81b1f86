# tenure: build, test, run a local cluster, build the image.
# Run `make` or `make help` for the list of targets.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

GO       ?= go
BIN      := bin/tenure
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X main.version=$(VERSION) -X main.revision=$(REVISION)
IMAGE    ?= tenure:dev
RUN_DIR  ?= .run
FUZZTIME ?= 30s

# The race detector needs cgo, and cgo needs a C compiler. Go turns cgo off
# when it finds none, so a machine with only Go installed runs the tests
# without -race rather than failing. Force either way with RACE=-race or
# RACE=.
RACE ?= $(if $(filter 1,$(shell $(GO) env CGO_ENABLED 2>/dev/null)),-race,)

.PHONY: help
help: ## Show the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-17s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/tenure: static (CGO_ENABLED=0), version from git describe
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tenure

.PHONY: run
run: build ## Run a three-node cluster on loopback in the foreground (data in RUN_DIR=.run; Ctrl-C stops it)
	BIN=$(BIN) RUN_DIR=$(RUN_DIR) deploy/local/run-cluster.sh

.PHONY: demo
demo: build ## The cluster of `make run`, a group of 64 keys and four demo workers; kill or drain one (data in RUN_DIR/demo, emptied at start; Ctrl-C stops it)
	BIN=$(BIN) RUN_DIR=$(RUN_DIR) deploy/local/run-demo.sh

.PHONY: clean-run
clean-run: ## Remove the data of `make run` (RUN_DIR)
	rm -rf -- $(RUN_DIR)

# The modules of this tree whose packages are tested as units: the root
# (server, CLI, state machine, test toolkit) and, once it is a module of its
# own, the Go client (client/go.mod).
CLIENT_MOD := $(if $(wildcard client/go.mod),client,)
UNIT_PKGS   = $$($(GO) list ./... | grep -v '/test/') ./test/harness/...

# test is what CI runs (.ci/run): lint (gofmt, go vet also of the fault
# suite's build tags, staticcheck), then every unit test with the race
# detector (test-race: what test-unit runs and the slow ones it skips),
# then test-integration, then test-jepsen. Each part runs alone so that no
# timing-sensitive suite competes with another for the CPU.
.PHONY: test
test: ## lint, every test with the race detector, integration, fault suite (what CI runs)
	$(MAKE) lint
	$(MAKE) test-race
	$(MAKE) test-integration
	$(MAKE) test-jepsen

# test-unit is the quick loop: every package's unit tests in -short mode
# (tests that start a whole cluster or wait on real timeouts skip), without
# the race detector; a few minutes at most on two cores.
.PHONY: test-unit
test-unit: ## Unit tests only, -short, no race detector (a few minutes)
	$(GO) test -short -count=1 $(UNIT_PKGS)
	$(if $(CLIENT_MOD),cd $(CLIENT_MOD) && $(GO) test -short -count=1 ./...)

# test-race is every unit test in full, with the race detector.
.PHONY: test-race
test-race:
	@if [ -z "$(RACE)" ]; then echo "note: cgo is off (no C compiler?), running the tests without -race"; fi
	$(GO) test $(RACE) -count=1 -timeout 25m $(UNIT_PKGS)
	$(if $(CLIENT_MOD),cd $(CLIENT_MOD) && $(GO) test $(RACE) -count=1 -timeout 10m ./...)

# test-integration: the benchmark harness's check, the deploy manifests'
# check, a scratch module that depends on the Go client alone
# (test/clientmodule: what a lease-only program compiles), then the
# integration tests (real binaries, the page in headless
# Chromium, the Python client, Docker Compose). They run without the race
# detector: their servers are real binaries built without it anyway, and
# the instrumented in-process workers of the 64-worker placement tests
# starved their own gossip on two cores (UDP probes timed out, live
# workers were declared dead).
.PHONY: test-integration
test-integration: python-deps browser-deps store-deps ## Integration tests: binaries, browser, Python client, Docker, fenced stores
	$(MAKE) bench-short
	$(MAKE) deploy-check
	$(GO) test -count=1 -timeout 5m ./test/clientmodule
	$(GO) test -count=1 -timeout 25m -v ./test/integration

# test-jepsen: the packages of the fault suite one at a time, the
# three-node suite of test/jepsen last and alone (it needs root;
# jepsen-deps installs ip and iptables when they are missing). `make
# jepsen` is the long five-node suite.
.PHONY: test-jepsen
test-jepsen: jepsen-deps ## The short fault suite (root): network namespaces, partitions, kills
	$(GO) test $(RACE) -count=1 -timeout 25m -p 1 -v ./test/jepsen/...

# deploy-check validates the Kubernetes manifests of deploy/ against the
# Kubernetes API's Go types, and the Prometheus rules and Grafana dashboard
# of deploy/ (their PromQL, and that every metric they use is in
# docs/metrics.md) with Prometheus' own parser (deploy/check, a module of
# its own so that k8s.io/api and prometheus are dependencies of the check
# only); no cluster runs them here.
.PHONY: deploy-check
deploy-check:
	cd deploy/check && $(GO) vet ./... && $(GO) test -count=1 ./...

# The fault suite's tools: ip (iproute2) and iptables, from the distribution
# when they are missing. Without root nothing is installed, and the suite
# skips (or fails under CI=true).
.PHONY: jepsen-deps
jepsen-deps:
	@if [ "$$(id -u)" = 0 ] && ! { command -v ip && command -v iptables; } >/dev/null 2>&1; then \
		echo "installing iproute2 and iptables for the fault suite"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 iptables >/dev/null; \
	fi

# The Python client's tests (TestPythonClient in test/integration) need
# python3 >= 3.9: installed from the distribution when it is missing and
# make runs as root; otherwise the test skips (or fails under CI=true).
.PHONY: python-deps
python-deps:
	@if [ "$$(id -u)" = 0 ] && ! command -v python3 >/dev/null 2>&1; then \
		echo "installing python3 for the Python client's tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null; \
	fi

# The fence adapters' tests (TestSQLFence*, TestRedisFence* and the Python
# client's PausedHolder tests in test/integration) write to a real
# PostgreSQL server and redis-server, with Debian's Python drivers for the
# Python ones: installed when missing and make runs as root. Without them
# the tests skip (or fail under CI=true).
.PHONY: store-deps
store-deps:
	@if [ "$$(id -u)" = 0 ] && ! { ls /usr/lib/postgresql/*/bin/postgres && command -v redis-server && \
		/usr/bin/python3 -c 'import psycopg2, redis'; } >/dev/null 2>&1; then \
		echo "installing postgresql, redis-server, python3-psycopg2 and python3-redis for the fence adapters' tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server python3-psycopg2 python3-redis >/dev/null; \
	fi

# The page's browser tests (TestPage* in test/integration) drive Debian's
# chromium headless; installed when missing and we are root. Without it
# they skip (or fail under CI=true).
.PHONY: browser-deps
browser-deps:
	@if [ "$$(id -u)" = 0 ] && ! command -v chromium >/dev/null 2>&1; then \
		echo "installing chromium for the page's browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# screenshots writes a PNG of each view of the page (/ui) into docs/img,
# from the browser tests' cluster.
.PHONY: screenshots
screenshots: browser-deps ## PNGs of the page's views into docs/img (headless chromium)
	$(GO) test -count=1 -timeout 5m -run '^TestPage$$' ./test/integration -args -screenshots ../../docs/img

# jepsen runs the long five-node fault suite alone. JEPSEN_FLAGS replays or
# focuses it: -seed N, -time-limit 20m, -nemesis kill-leader,one-way,
# -workload register,mutex, -nodes 3, -suite short, -controls=false.
JEPSEN_FLAGS ?=
.PHONY: jepsen
jepsen: jepsen-deps ## The long five-node fault suite (root); JEPSEN_FLAGS="-seed N -time-limit 20m -nemesis a,b -workload x,y"
	$(GO) test -count=1 -timeout 120m -v -run '^TestJepsen$$' ./test/jepsen -args -suite long -nodes 5 $(JEPSEN_FLAGS)

.PHONY: bench
bench: ## Benchmarks of the state machine and the cluster
	$(GO) test -run '^$$' -bench . -benchmem ./fsm/ ./cluster/

# The side-by-side benchmark of tenure against etcd (test/bench, a module of
# its own so that the etcd client is a dependency of the benchmark only).
# bench-short is its check in `make test`: vet, unit tests, and a run of
# every workload for 2s against tenure alone (no etcd needed; under a
# minute). bench-compare is the full comparison against a three-node etcd
# (Debian's etcd-server, installed as root when missing), about 10 minutes;
# it writes test/bench/results/<date>.md and .svg. BENCH_FLAGS adds
# options: -duration 5s, -failover-leases 200000, -memory-leases
# 200000,1000000, -only renew.
BENCH_FLAGS ?=
# bench-deps installs Debian's etcd-server (the comparison's etcd) when it
# is missing and we are root; without root the comparison test skips (or
# fails under CI=true).
.PHONY: bench-deps
bench-deps:
	@if [ "$$(id -u)" = 0 ] && ! command -v etcd >/dev/null 2>&1; then \
		echo "installing etcd-server for the comparison with etcd"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; \
	fi

.PHONY: bench-short
bench-short: build bench-deps bench-etcd store-deps
	cd test/bench && $(GO) vet ./... && TENURE_BIN=$(CURDIR)/$(BIN) ETCD_CURRENT_BIN=$(CURDIR)/bin/etcd-current \
		$(GO) test $(RACE) -count=1 -timeout 15m ./...
	cd test/bench && $(GO) run ./cmd/benchcompare -tenure ../../$(BIN) -tenure-only -strict -duration 2s -rounds 1 -bulk-leases 100 -no-results

# bench-overload: tenure under more renewals than two cores answer, as
# docs/performance.md reports (writes test/bench/results/<date>-overload.md).
OVERLOAD_FLAGS ?=
.PHONY: bench-overload
bench-overload: build ## 1000 and 2000 clients renewing 10 leases each for 60 s, 5 runs each (about 12 minutes); OVERLOAD_FLAGS="-runs 1"
	cd test/bench && $(GO) run ./cmd/overload -tenure ../../$(BIN) -results results/$$(date -u +%F)-overload.md $(OVERLOAD_FLAGS)

# bench-etcd builds a current etcd (the version test/bench/go.mod names,
# from etcd's own Go modules) into bin/etcd-current, measured beside
# Debian's etcd-server 3.4.
.PHONY: bench-etcd
bench-etcd:
	cd test/bench && $(GO) build -o ../../bin/etcd-current ./cmd/etcd

.PHONY: bench-compare
bench-compare: build bench-deps bench-etcd ## tenure against a current etcd and Debian's 3.4, each in every arm, about an hour (installs etcd-server as root); BENCH_FLAGS="-duration 5s -failover-leases 200000"
	@command -v etcd >/dev/null 2>&1 || { echo "bench-compare: etcd not found; install etcd-server (Debian) or run as root"; exit 1; }
	cd test/bench && $(GO) run ./cmd/benchcompare -tenure ../../$(BIN) -etcd ../../bin/etcd-current,$$(command -v etcd) $(BENCH_FLAGS)

# bench-locks is the long side-by-side lock test (test/bench/sidebyside):
# etcd's Mutex (the current release and Debian's) and tenure's lease, each
# with a PostgreSQL store unfenced and fenced, under one seed of pauses and
# cuts in network namespaces (root); about 15 minutes. It writes
# test/bench/results/<date>-locks.md with the command, the seed and the
# counts. LOCKS_FLAGS="-seed N -duration 5m". Its short run is
# TestLocksSideBySide, in make test.
LOCKS_FLAGS ?=
.PHONY: bench-locks
bench-locks: build bench-deps bench-etcd store-deps ## etcd's lock and tenure's, fenced and not, under pauses and cuts (root, ~15 min); LOCKS_FLAGS="-seed N"
	cd test/bench && $(GO) run ./cmd/sidebyside -tenure ../../$(BIN) -etcd ../../bin/etcd-current -etcd-debian "$$(command -v etcd)" $(LOCKS_FLAGS)

.PHONY: fuzz
fuzz: ## Fuzz the command decoder, snapshot restore and every HTTP route, FUZZTIME (30s) each
	$(GO) test ./fsm -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./fsm -run '^$$' -fuzz '^FuzzRestore$$' -fuzztime $(FUZZTIME)
	$(GO) test ./httpapi -run '^$$' -fuzz '^FuzzRoutes$$' -fuzztime $(FUZZTIME) -parallel 2

# The image is FROM scratch and holds the static binary that `make build`
# made on this machine; no base image is pulled. Only the binary, the
# Dockerfile and the image's root files are sent to the daemon.
.PHONY: docker
docker: build ## Build the image IMAGE=tenure:dev (FROM scratch, with bin/tenure)
	tar -c bin/tenure deploy/Dockerfile deploy/rootfs | docker build -f deploy/Dockerfile -t $(IMAGE) -

# lint: gofmt, go vet (of every module, and once with all the fault
# suite's build tags: each tag only swaps one file for its unsafe twin, so
# one vet with all of them checks every twin), staticcheck (run at a pinned version through the module proxy, so
# nothing needs installing first), and the Python client's type check
# (mypy, below).
JEPSEN_TAGS := tenure_clockdrift tenure_unsafe_renew tenure_unsafe_keep jepsen_nofence tenure_unsafe_rounds tenure_unsafe_handover tenure_unsafe_plainraft tenure_unsafe_identity tenure_unsafe_restore
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Commit subjects from HISTORY_BASE on, merges too, are at most 72
# characters (`pkg: what changed`; the why goes in the body). Older history is as it was; a
# shallow clone without HISTORY_BASE skips the check.
HISTORY_BASE := 9d68db99b57d8315277528c3801150d0064dda9d
.PHONY: lint
lint: ## gofmt check, go vet (also with the fault suite's tags), staticcheck, commit subjects, mypy
	@if git cat-file -e $(HISTORY_BASE) 2>/dev/null; then \
		long=$$(git log --format=%s $(HISTORY_BASE)..HEAD | awk 'length($$0) > 72'); \
		if [ -n "$$long" ]; then echo "commit subjects over 72 characters:"; echo "$$long"; exit 1; fi; \
	fi
	@files=$$(gofmt -l .); if [ -n "$$files" ]; then echo "gofmt needed:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags "$$(echo $(JEPSEN_TAGS) | tr ' ' ',')" ./cmd/... ./cluster/... ./httpapi/... ./test/jepsen/cmd/...
	$(STATICCHECK) ./...
	$(if $(CLIENT_MOD),cd $(CLIENT_MOD) && $(GO) vet ./... && $(GO) vet -tags tenure_unsafe_keep ./... && $(STATICCHECK) ./...)
	$(if $(CLIENT_MOD),,$(GO) vet -tags "$$(echo $(JEPSEN_TAGS) | tr ' ' ',')" ./client/...)
	$(MAKE) mypy

# mypy: the Python client's type check, strict (the [tool.mypy] of
# client/python/pyproject.toml). Debian's mypy is installed when it is
# missing and make runs as root; without it the check is skipped with a
# note (or fails under CI=true).
.PHONY: mypy
mypy: ## Type-check the Python client (mypy --strict; installs Debian's mypy as root)
	@if [ "$$(id -u)" = 0 ] && ! command -v mypy >/dev/null 2>&1; then \
		echo "installing mypy for the Python client's type check"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mypy >/dev/null; } || true; \
	fi
	@if command -v mypy >/dev/null 2>&1; then \
		cd client/python && mypy; \
	elif [ "$${CI:-}" = true ]; then \
		echo "mypy: not found and not installable (CI=true): the Python client's type check cannot run"; exit 1; \
	else \
		echo "note: mypy not found (Debian package mypy, or pip install mypy): skipping the Python client's type check"; \
	fi

.PHONY: clean
clean: ## Remove build output (not RUN_DIR: see clean-run)
	rm -rf bin
