# warmcache — see README.md.
GO ?= go
PKGS ?= ./...
BENCHTIME ?= 1x

.PHONY: test test-unit vet fmt fmt-check bench stress

# MODULES are the nested modules whose tests and vet run with the root's
# (go test ./... does not enter them): crcache depends on
# controller-runtime, which the root module must not. Each builds against
# this checkout through the go.work beside it (RELEASING.md). The
# controller-runtime example's tests run from test/e2e.
MODULES ?= crcache

## test: vet, then every test with the race detector.
test: vet fmt-check
	$(GO) test -race -count=1 -timeout 45m $(PKGS)
	for m in $(MODULES); do (cd $$m && $(GO) test -race -count=1 -timeout 20m ./...) || exit 1; done

## test-unit: the quick loop (-short skips the slow crash and end-to-end suites).
test-unit: vet
	$(GO) test -race -short -count=1 $(PKGS)
	for m in $(MODULES); do (cd $$m && $(GO) test -race -short -count=1 ./...) || exit 1; done

## stress: every test -race -count=$(STRESS_COUNT) while a second go test loads
## the machine (test/stress.sh); -short by default (STRESS_FLAGS= to include the
## crash and end-to-end suites; STRESS_RUN=PATTERN for some tests only,
## STRESS_TIMEOUT=DURATION). A failure is a flake: fix it at its cause.
STRESS_COUNT ?= 20
stress:
	bash test/stress.sh $(STRESS_COUNT) $(PKGS)

vet:
	$(GO) vet $(PKGS)
	for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

fmt:
	gofmt -w $$(git ls-files '*.go')

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: the store and informer benchmarks, side by side with client-go.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./benchmarks/... ./store/...

.PHONY: kubebin
## kubebin: build (or reuse) the kube-apiserver, etcd and kubectl the end-to-end
## tests run, cached outside the repo (WARMCACHE_KUBEBIN_DIR, else the user cache dir).
kubebin:
	$(GO) run ./internal/kubebin/cmd/kubebin -kubectl

.PHONY: soak
## soak: SOAK_DURATION (60m) of faults from the seed SOAK_SEED (default: random,
## printed) against a real kube-apiserver and etcd (internal/soak): churn, SIGKILLs,
## apiserver restarts, compactions, cut and stalled streams, a full disk, a damaged
## page; every recovery checked against etcd's history. The report (Markdown, SVG,
## JSON) goes to SOAK_REPORT; SOAK_FLAGS passes flags (bin/soak -h). Exits 1 when
## a check failed.
SOAK_DURATION ?= 60m
SOAK_SEED ?=
SOAK_REPORT ?= bin/soak-report
SOAK_FLAGS ?=
soak:
	@$(GO) run ./internal/kubebin/cmd/kubebin >&2
	$(GO) build -o bin/ ./cmd/snapshot ./internal/soak/cmd/soak
	bin/soak -duration $(SOAK_DURATION) $(if $(SOAK_SEED),-seed $(SOAK_SEED)) -snapshot bin/snapshot -report $(SOAK_REPORT) $(SOAK_FLAGS)

.PHONY: demo
## demo: a local kube-apiserver with 20,000 pods; the example controller runs cold,
## then warm on the same cache file; prints the side-by-side table. Builds or reuses
## the binaries as make kubebin does (its output goes to stderr). DEMO_FLAGS passes
## flags, e.g. DEMO_FLAGS="-pods 50000 -keep" (see examples/demo).
DEMO_FLAGS ?=
demo:
	@$(GO) run ./internal/kubebin/cmd/kubebin >&2
	@$(GO) run ./examples/demo $(DEMO_FLAGS)
