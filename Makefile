# Build gates for plan. `make check` is the one gate; CI runs it through .ci/run.
#
# Every tool the gates need is pinned here and installed into ./.tools/bin on first use, so a fresh
# clone needs nothing but Go, gcc (for the cgo sqlite driver), the PostgreSQL server binaries
# (Debian's postgresql-15 package), Node.js 20+ and npm (scripts/check-prereqs checks them all
# first): the tests run against a real MinIO, built from source here, and
# a real PostgreSQL, both started and stopped by scripts/servers. Bumping a version below reinstalls
# that tool: the install target is a per-version stamp file.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := check
# check must run its steps in order and stop at the first failure, even under `make -j`.
.NOTPARALLEL:

GO ?= go

# Pinned tools. Each was checked to build with the Go in go.mod (1.26.8).
GOLANGCI_LINT_VERSION := v2.15.0
# golang.org/x/tools release that provides cmd/deadcode.
DEADCODE_VERSION := v0.52.0
# v2.30.0 does not install: it needs github.com/pb33f/go-yaml v0.1.1, which the module proxy no
# longer serves (403). v2.29.0 is the newest release that builds.
GOSEC_VERSION := v2.29.0
# The S3-compatible server the tests run against (scripts/servers). MinIO publishes no Go module
# releases, so it is pinned by pseudo-version (the commit of 2026-02-12); a cold build takes 3-5
# minutes, paid once: the binary stays in .tools.
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
# Runs `go test` and closes with a count of the tests it ran ("DONE 3021 tests in 98.1s"), so a run
# that ran none cannot pass for one that passed.
GOTESTSUM_VERSION := v1.13.0
# The coding agents `make e2e-agents` drives, from the npm registry (Node 20 and npm are enough:
# Claude Code's and Codex's platform packages ship native binaries, so no install script is run).
CLAUDE_CODE_VERSION := 2.1.332
CODEX_VERSION := 0.169.0
GEMINI_CLI_VERSION := 0.61.0

# The MCP clients `make mcp-conformance` drives `plan mcp` with, from the npm registry: the protocol's
# conformance suite, the inspector (its --cli), and Node.js 22 as the `node` package (both clients
# use APIs Node 20 lacks). scripts/mcp/package.json pins the same versions and package-lock.json
# every dependency; bump them together (the run checks that the installed versions are these).
MCP_CONFORMANCE_VERSION := 0.1.16
MCP_INSPECTOR_VERSION := 2.12.0
MCP_NODE_VERSION := 22.23.3

TOOLS_BIN := $(CURDIR)/.tools/bin
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint
DEADCODE := $(TOOLS_BIN)/deadcode
GOSEC := $(TOOLS_BIN)/gosec
GOLANGCI_LINT_STAMP := $(TOOLS_BIN)/.golangci-lint@$(GOLANGCI_LINT_VERSION)
DEADCODE_STAMP := $(TOOLS_BIN)/.deadcode@$(DEADCODE_VERSION)
GOSEC_STAMP := $(TOOLS_BIN)/.gosec@$(GOSEC_VERSION)
MINIO := $(TOOLS_BIN)/minio
GOTESTSUM := $(TOOLS_BIN)/gotestsum
GOTESTSUM_STAMP := $(TOOLS_BIN)/.gotestsum@$(GOTESTSUM_VERSION)
MINIO_STAMP := $(TOOLS_BIN)/.minio@$(MINIO_VERSION)
AGENTS_DIR := $(CURDIR)/.tools/agents
CLAUDE_CODE_STAMP := $(AGENTS_DIR)/.claude-code@$(CLAUDE_CODE_VERSION)
CODEX_STAMP := $(AGENTS_DIR)/.codex@$(CODEX_VERSION)
GEMINI_CLI_STAMP := $(AGENTS_DIR)/.gemini-cli@$(GEMINI_CLI_VERSION)
MCP_TOOLS := $(CURDIR)/.tools/mcp
MCP_CLIENTS_STAMP := $(MCP_TOOLS)/.clients@conformance-$(MCP_CONFORMANCE_VERSION)+inspector-$(MCP_INSPECTOR_VERSION)+node-$(MCP_NODE_VERSION)

# The layers whose coverage counts. A layer that has no files yet is left out rather than passed
# as a pattern that matches nothing.
LAYERS := domain application infrastructure interfaces
comma := ,
empty :=
space := $(empty) $(empty)
# Test-support packages (names ending in "test": treetest, checkpointtest) are not product code:
# their failure branches run only when a test fails, so they are left out of the measure.
COVERPKG = $(subst $(space),$(comma),$(strip $(shell $(GO) list $(foreach d,$(LAYERS),$(if $(wildcard $(d)/*),./$(d)/...)) | grep -v -E 'test$$')))
COVERAGE_FLOOR ?= 97
COVERAGE_DIR := coverage

CRASH_TRIALS ?= 300
BENCH_FLAGS ?=

# Go sources to format-check: everything but tool installs, VCS data and testdata fixtures (which
# may hold deliberately malformed Go).
GO_SOURCES = find . -type f -name '*.go' -not -path './.git/*' -not -path './.tools/*' \
	-not -path './tmp/*' -not -path '*/testdata/*' -print0

.PHONY: check prereqs fmt fmt-fix lint vet deadcode security test bdd bdd-binary coverage build demo bench examples \
	crash tools minio servers clean clean-tools e2e-agents mcp-conformance

check: prereqs fmt lint vet deadcode security test bdd coverage examples e2e-agents mcp-conformance
	@echo "check: all gates passed"

# What the machine must provide (the Go of go.mod, cgo and a C compiler, PostgreSQL's server
# binaries, Node.js 20+ and npm, disk): all of it named at once, with how to install it, before the
# first gate rather than 20 minutes in.
prereqs:
	@GO=$(GO) scripts/check-prereqs

## ---- tools -------------------------------------------------------------------------------

# The static gates' tools. MinIO is not among them: it is the slow one to build, and only the targets
# that run tests (test, bdd, bench, servers) need it, each as a prerequisite.
tools: $(GOLANGCI_LINT_STAMP) $(DEADCODE_STAMP) $(GOSEC_STAMP)

minio: $(MINIO_STAMP)

# A stamp whose binary was deleted by hand is stale: drop it so the tool is installed again.
$(foreach t,golangci-lint deadcode gosec minio gotestsum,$(if $(wildcard $(TOOLS_BIN)/$(t)),,$(shell rm -f $(TOOLS_BIN)/.$(t)@*)))
$(if $(wildcard $(MCP_TOOLS)/node_modules/.bin/node),,$(shell rm -f $(MCP_TOOLS)/.clients@*))

# `go install pkg@version` ignores this module's go.mod, so the tools' dependencies never leak into
# ours. The stamp records which version the binary is; old stamps are removed so a bump reinstalls.
$(GOLANGCI_LINT_STAMP):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	@rm -f $(TOOLS_BIN)/.golangci-lint@* && touch $@

$(DEADCODE_STAMP):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION)
	@rm -f $(TOOLS_BIN)/.deadcode@* && touch $@

$(GOSEC_STAMP):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/securego/gosec/v2/cmd/gosec@$(GOSEC_VERSION)
	@rm -f $(TOOLS_BIN)/.gosec@* && touch $@

$(GOTESTSUM_STAMP):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)
	@rm -f $(TOOLS_BIN)/.gotestsum@* && touch $@

$(MINIO_STAMP):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/minio/minio@$(MINIO_VERSION)
	@rm -f $(TOOLS_BIN)/.minio@* && touch $@

# The agents' installs: a per-version stamp like the Go tools'; a stamp whose agent was deleted is stale.
$(if $(wildcard $(AGENTS_DIR)/claude/node_modules/@anthropic-ai/claude-code),,$(shell rm -f $(AGENTS_DIR)/.claude-code@*))
$(CLAUDE_CODE_STAMP):
	@rm -rf $(AGENTS_DIR)/claude && mkdir -p $(AGENTS_DIR)/claude
	npm install --prefix $(AGENTS_DIR)/claude --no-audit --no-fund --ignore-scripts --loglevel=error \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	@rm -f $(AGENTS_DIR)/.claude-code@* && touch $@

$(if $(wildcard $(AGENTS_DIR)/codex/node_modules/@openai/codex),,$(shell rm -f $(AGENTS_DIR)/.codex@*))
$(CODEX_STAMP):
	@rm -rf $(AGENTS_DIR)/codex && mkdir -p $(AGENTS_DIR)/codex
	npm install --prefix $(AGENTS_DIR)/codex --no-audit --no-fund --ignore-scripts --loglevel=error \
		@openai/codex@$(CODEX_VERSION)
	@rm -f $(AGENTS_DIR)/.codex@* && touch $@

# Gemini CLI is a Node bundle, run by the node on PATH (20 is enough).
$(if $(wildcard $(AGENTS_DIR)/gemini/node_modules/@google/gemini-cli),,$(shell rm -f $(AGENTS_DIR)/.gemini-cli@*))
$(GEMINI_CLI_STAMP):
	@rm -rf $(AGENTS_DIR)/gemini && mkdir -p $(AGENTS_DIR)/gemini
	npm install --prefix $(AGENTS_DIR)/gemini --no-audit --no-fund --ignore-scripts --loglevel=error \
		@google/gemini-cli@$(GEMINI_CLI_VERSION)
	@rm -f $(AGENTS_DIR)/.gemini-cli@* && touch $@

# npm ci installs exactly the lock file's tree; a bump (a new stamp name) reinstalls from scratch.
$(MCP_CLIENTS_STAMP): scripts/mcp/package.json scripts/mcp/package-lock.json
	@rm -rf $(MCP_TOOLS) && mkdir -p $(MCP_TOOLS)
	cp scripts/mcp/package.json scripts/mcp/package-lock.json $(MCP_TOOLS)/
	cd $(MCP_TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## ---- static gates ------------------------------------------------------------------------

fmt:
	@files=$$($(GO_SOURCES) | xargs -0 -r gofmt -l); \
	if [ -n "$$files" ]; then \
		echo "fmt: these files are not gofmt-formatted (run 'make fmt-fix'):"; echo "$$files"; exit 1; \
	fi

fmt-fix:
	$(GO_SOURCES) | xargs -0 -r gofmt -w

lint: $(GOLANGCI_LINT_STAMP)
	$(GOLANGCI_LINT) run ./...

# vet also cross-vets the platforms plan supports besides Linux (CGO off: vet needs no C toolchain
# for another OS), so code that only builds on Linux fails here, not on a user's Mac.
CROSS_TARGETS := darwin/arm64 darwin/amd64 freebsd/amd64
vet:
	$(GO) vet ./...
	@for t in $(CROSS_TARGETS); do \
		echo "vet $$t"; GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) vet ./... || exit 1; \
	done

# Dead code is what no real entry point reaches: the binaries under cmd/ and examples/, and their
# tests (-test). Filtered out, and only these:
#  - features/: the godog suite's support code is reached only from its own test binary, which is
#    not one of the roots above;
#  - "unreachable func: Test…": exported test helpers in non-test files (objectstore.TestStore(t)),
#    which the house style asks for and which only other packages' tests call.
DEADCODE_ROOTS = $(foreach d,cmd examples,$(if $(wildcard $(d)/*),./$(d)/...))
deadcode: $(DEADCODE_STAMP)
	@roots="$(strip $(DEADCODE_ROOTS))"; \
	if [ -z "$$roots" ]; then echo "deadcode: no packages under ./cmd or ./examples yet; nothing to check"; exit 0; fi; \
	out=$$($(DEADCODE) -test $$roots); \
	out=$$(printf '%s\n' "$$out" | grep -v -e '^features/' -e 'unreachable func: Test[A-Z_]' | sed '/^$$/d' || true); \
	if [ -n "$$out" ]; then echo "deadcode: unreachable code (delete it, or use it):"; echo "$$out"; exit 1; fi; \
	echo "deadcode: ok ($$roots)"

# gosec runs offline (GOPROXY=off) after the module cache is filled, so the scan can never depend
# on the network. Test files are not scanned (gosec's default). Excluded rules, each inherent to what
# plan is:
#  - G204 (subprocess launched with variable): `plan run` and `plan exec` run the user's commands
#    through /bin/sh -c; that is the product, not an injection.
#  - G304 (file inclusion via variable) and G703 (its taint-analysis twin, path traversal): plan
#    reads and restores files at paths it walks in the user's workspace (and reads .git/HEAD);
#    every path is variable by nature. Escapes are checked in code, and tested.
# Suppress a single finding with `// #nosec G115 -- why`: standalone gosec ignores `//nolint:gosec`.
GOSEC_EXCLUDE := G204,G304,G703
security: $(GOSEC_STAMP)
	@$(GO) mod download
	GOPROXY=off $(GOSEC) -quiet -exclude-generated -exclude=$(GOSEC_EXCLUDE) $(if $(CI),-color=false) ./...

## ---- tests -------------------------------------------------------------------------------

# Every test command runs inside `scripts/servers run --`, which starts a throwaway MinIO and
# PostgreSQL on free ports of 127.0.0.1, exports PLAN_TEST_* (see tests/testkit/servertest, whose
# helpers skip a test without them) with PLAN_TEST_REQUIRE_SERVERS=1 (so under make they fail
# instead), and stops both and deletes their files when the command ends, fails or is interrupted.
# It costs a few seconds per target.
SERVERS_RUN := PLAN_SERVERS_MINIO=$(MINIO) $(CURDIR)/scripts/servers run --

# For developers: the same servers in the foreground, their environment printed to eval elsewhere,
# until Ctrl-C.
servers: $(MINIO_STAMP)
	PLAN_SERVERS_MINIO=$(MINIO) $(CURDIR)/scripts/servers serve

# Coverage is not a third test run. `test` (unit, -race) and `bdd` (godog) each write a profile
# instrumented over the same -coverpkg set in atomic mode (which -race requires anyway), and
# `coverage` depends on both and merges them: `go tool cover` sums blocks that appear in several
# profiles. Within one make invocation each prerequisite runs once, so `make check` runs every test
# once, and `make coverage` alone still runs both suites fresh, so the figure is never stale.
# The only difference from a separate plain run is that unit tests are measured under -race, which
# changes timing, not which statements run. (With -coverpkg every test binary links every covered
# package, so one package that does not compile fails all unit tests; `make vet` has said which.)
COVER_FLAGS = -covermode=atomic $(if $(COVERPKG),-coverpkg=$(COVERPKG))

# Unit tests: every package except the BDD suite. Packages without tests (cmd/, bench/) are still
# compiled by `go test`, so a harness that stopped building fails here.
# gotestsum prints what `go test` prints (a line per package, failures in full) and closes with the
# number of tests run.
GO_TEST = $(GOTESTSUM) --format pkgname-and-test-fails --format-hide-empty-pkg --
test: $(MINIO_STAMP) $(GOTESTSUM_STAMP)
	@mkdir -p $(COVERAGE_DIR)
	$(SERVERS_RUN) $(GO_TEST) -race -count=1 $(COVER_FLAGS) -coverprofile=$(COVERAGE_DIR)/unit.out \
		$$($(GO) list ./... | grep -v -E '/features(/|$$)')

bdd: $(MINIO_STAMP) $(GOTESTSUM_STAMP)
	@mkdir -p $(COVERAGE_DIR)
ifeq ($(wildcard features/*),)
	@echo "bdd: SKIPPED: ./features does not exist yet"; rm -f $(COVERAGE_DIR)/bdd.out
else
	$(SERVERS_RUN) $(GO_TEST) -count=1 $(COVER_FLAGS) -coverprofile=$(COVERAGE_DIR)/bdd.out ./features/...
endif

# The same suite, driving the real binary instead of the in-process CLI.
bdd-binary: build $(MINIO_STAMP)
	PLAN_BINARY=$(CURDIR)/bin/plan $(SERVERS_RUN) $(GO) test -count=1 ./features/...

coverage: test bdd
	@{ echo "mode: atomic"; for f in $(COVERAGE_DIR)/unit.out $(COVERAGE_DIR)/bdd.out; do \
		if [ -f "$$f" ]; then tail -n +2 "$$f"; fi; done; } > $(COVERAGE_DIR)/cover.out
	@$(GO) tool cover -func=$(COVERAGE_DIR)/cover.out > $(COVERAGE_DIR)/func.txt
	@total=$$(awk '/^total:/ { sub(/%/, "", $$NF); print $$NF }' $(COVERAGE_DIR)/func.txt); \
	echo "coverage: total $${total}% of statements in $(LAYERS), test-support packages aside (floor $(COVERAGE_FLOOR)%)"; \
	if ! awk -v t="$$total" -v f="$(COVERAGE_FLOOR)" 'BEGIN { exit !(t + 0 >= f + 0) }'; then \
		echo "coverage: below the floor; the least covered functions:"; \
		awk '$$1 != "total:" { p = $$NF; sub(/%/, "", p); if (p + 0 < 100) print p "%\t" $$1 " " $$2 }' \
			$(COVERAGE_DIR)/func.txt | sort -n | head -n 20; \
		exit 1; \
	fi

# Kill-9 crash trials (written with the crash build tag), then the whole hostile suite with its
# loops lengthened. The count is passed to the tests; the shared-store trials run against the same
# throwaway servers as the tests, with PostgreSQL durable (fsync and synchronous commits on), since
# a trial judges what a commit that reported success left behind.
CRASH_PKGS = $(foreach d,infrastructure features tests,$(if $(wildcard $(d)/*),./$(d)/...))
crash: $(MINIO_STAMP)
	PLAN_SERVERS_PG_DURABLE=1 PLAN_CRASH_TRIALS=$(CRASH_TRIALS) $(SERVERS_RUN) sh -c '\
		$(GO) test -v -count=1 -run TestCrash -tags crash -timeout 60m $(CRASH_PKGS) && \
		$(GO) test -v -count=1 -tags crash -timeout 60m ./tests/hostile/' \
		| grep -E "^(=== RUN|--- |ok|FAIL|PASS)|trials|mixed|MIXED"

# The real agents driven offline by a scripted model server (tests/agents): the
# binaries come from the pinned npm installs above; HOME is a temporary directory in every test.
e2e-agents: build $(CLAUDE_CODE_STAMP) $(CODEX_STAMP) $(GEMINI_CLI_STAMP)
	PLAN_E2E_REQUIRE=1 PLAN_E2E_PLAN=$(CURDIR)/bin/plan \
	PLAN_E2E_CLAUDE=$$(ls $(AGENTS_DIR)/claude/node_modules/@anthropic-ai/claude-code-*/claude | head -n 1) \
	PLAN_E2E_CODEX=$$(ls $(AGENTS_DIR)/codex/node_modules/@openai/codex-*/vendor/*/bin/codex | head -n 1) \
	PLAN_E2E_GEMINI=$(AGENTS_DIR)/gemini/node_modules/.bin/gemini \
		$(GO) test -count=1 -v -timeout 5m ./tests/agents/

## ---- build and run -----------------------------------------------------------------------

# `plan mcp` against the MCP clients of the protocol's own project, offline once installed: the
# conformance suite (its server scenarios reach a server by URL only, so through
# scripts/mcp/bridge, which passes each message to a `plan mcp` process unchanged; the scenarios
# that need the suite's fixture tools, resources and prompts are listed as not applicable in
# scripts/mcp/conformance-baseline.yml), then the inspector's CLI on `plan mcp` over stdio: every
# tool, bad input, and a restore and its undo checked byte for byte. About 30 s.
mcp-conformance: build $(MCP_CLIENTS_STAMP)
	MCP_TOOLS=$(MCP_TOOLS) PLAN=$(CURDIR)/bin/plan GO=$(GO) MCP_CONFORMANCE_VERSION=$(MCP_CONFORMANCE_VERSION) \
		MCP_INSPECTOR_VERSION=$(MCP_INSPECTOR_VERSION) MCP_NODE_VERSION=$(MCP_NODE_VERSION) scripts/mcp/conformance

# The embedding example is a program a host would write: it must build and do its job, so check
# runs it (it exits non-zero if the correction did not restore and archive what it should).
examples:
	$(GO) run ./examples/embed
	$(GO) run ./examples/fx

# urfave_cli_no_docs leaves out urfave/cli's markdown and man page renderers (plan man renders its
# own roff): blackfriday's start-up tables, 0.3 ms of every command. Only a saving: a build without
# the tag (go install, go run, go build) is the same program.
BUILD_TAGS := urfave_cli_no_docs

build:
	$(GO) build -buildvcs=true -tags $(BUILD_TAGS) -o bin/plan ./cmd/plan

demo: build
	./bin/plan demo

# make bench BENCH_FLAGS='-files=100000 -strict'
bench: $(MINIO_STAMP)
	$(SERVERS_RUN) $(GO) run ./bench $(BENCH_FLAGS)

clean:
	rm -rf bin $(COVERAGE_DIR)

clean-tools:
	rm -rf .tools
