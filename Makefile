# tandem: one binary, tests, benchmarks. `make help` lists the targets.
GO      ?= go
PREFIX  ?= /usr/local
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: help build install deps demo test test-short test-faults fuzz vet bench-overhead bench-tm1 bench-tls bench-failover bench-benchbase clean

help:
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

deps: ## install PostgreSQL, HAProxy, pgpool-II and the C compiler if missing
	./scripts/install-deps.sh

build: ## build ./bin/tandem
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tandem ./cmd/tandem

install: build ## install tandem into $(PREFIX)/bin
	install -m 0755 bin/tandem $(PREFIX)/bin/tandem

demo: install ## the main job: a SQLite hot-standby pair with automatic failover runs TM1; its primary is SIGKILLed mid-run; report
	tandem demo

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

test: deps vet ## everything CI runs: unit, end-to-end (real processes; two halves at once, scripts/test-all.sh), race detector on the concurrent packages, fuzz seed corpora
	GO=$(GO) ./scripts/test-all.sh

test-short: ## unit tests only
	$(GO) test -count=1 -short ./...

test-faults: ## fault tests with many trials: SIGKILL the primary (automatic and manual failover), and promote --force under writers, 20 times per safeness level
	TANDEM_FAULT_TRIALS=20 $(GO) test -count=1 -timeout 60m -v -run 'TestAutomaticFailover|TestFailoverSafeness|TestPromoteForced' ./e2e 2>&1 | tee test-faults.log | grep -E 'trials|--- |^ok|FAIL'

fuzz: ## fuzz the wire protocol, the translator, the jsonpath parser and evaluator and the replication frame reader (5 minutes each); findings land in testdata/fuzz and run in every go test
	$(GO) test -run '^$$' -fuzz FuzzMessageLoop -fuzztime 5m ./pgwire
	$(GO) test -run '^$$' -fuzz FuzzTranslate -fuzztime 5m ./sqlpg
	$(GO) test -run '^$$' -fuzz FuzzJSONPath -fuzztime 5m ./sqlpg
	$(GO) test -run '^$$' -fuzz FuzzReadFrame -fuzztime 5m ./replication

bench-overhead: build ## pgbench direct vs through tandem vs HAProxy (alternating)
	./scripts/install-deps.sh --bench
	./bin/tandem bench overhead

bench-tm1: build ## TM1 R80W20/R20W80 at 100,000 subscribers: PostgreSQL direct vs through tandem vs tandem on SQLite
	./scripts/install-deps.sh
	TANDEM=$(CURDIR)/bin/tandem ./scripts/bench-tm1.sh 100000 30s 8

bench-benchbase: build ## tandem's TPC-C and Epinions drivers next to BenchBase (2 warehouses, 4 terminals, 30 s, 3 rounds) on PostgreSQL directly and through tandem; skips with the build command when BenchBase is not built
	TANDEM=$(CURDIR)/bin/tandem ./scripts/bench-benchbase.sh 2 30 4 3

bench-tls: build ## what mutual TLS between tandem's processes costs: TM1 R20W80 through a hot-standby pair's router, TLS vs clear text (alternating)
	TANDEM=$(CURDIR)/bin/tandem ./scripts/bench-tls.sh 20000 15s 8 3 r20w80

bench-ddl: build ## what a schema change costs a running hot-standby pair (TM1 R20W80 through the router; both back ends)
	TANDEM=$(CURDIR)/bin/tandem ./scripts/bench-ddl.sh sqlite
	TANDEM=$(CURDIR)/bin/tandem ./scripts/bench-ddl.sh postgres

bench-failover: build ## automatic failover: SIGKILL of the primary, 20 trials per safeness level on the SQLite pair (time to the first commit, lost acknowledged commits), and the lease's steady-state cost (TM1 R20W80, manual vs automatic, alternating); BACKEND=postgres for PostgreSQL
	./bin/tandem bench failover --backend $(or $(BACKEND),sqlite) --trials 20 --lease-rounds 3 --out out/failover-$(or $(BACKEND),sqlite)

bench-sweep: build ## seed 000: standalone / hot-standby safeness and durability vs PostgreSQL's streaming pair, direct and behind HAProxy (TM1, ~45 min with 3 rounds)
	./scripts/install-deps.sh
	./bin/tandem bench sweep --rounds 3 --out out/sweep

clean:
	rm -rf bin .tandem
