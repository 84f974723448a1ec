# live-ci: `make demo` runs the main job on a local default, `make test` runs every test.
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never
WORK ?= .work
# scripts/localstack.sh keeps its venv and state here.
export LIVE_CI_WORK ?= $(abspath $(WORK))
# The e2e github_app binary's own local cloud in `make test` (beside the pipeline
# binary's, which has the default port): its work dir and LocalStack port.
E2E_APP_WORK ?= $(LIVE_CI_WORK)/e2e-app
E2E_APP_PORT ?= 4591

.PHONY: all build demo demo-dry deploy-local test lint fmt bench bench-pipeline clean localstack-up localstack-down infra-check package package-check e2e-release

all: build

build:
	$(CARGO) build --locked --workspace

## The whole pipeline on this machine: the local cloud, the Terraform module
## deployed into it, a merged PR on the sample repo approved through the mailed
## links, the run shown live, the summary and commit statuses; then teardown.
demo: build
	# `--bin` alone, not `-p`: the features of the `build` above, so nothing compiles twice.
	$(CARGO) run --locked -q --bin live-ci-demo

## The CLI's dry run on the sample live repo: discovery, change detection, the deployment plan.
demo-dry: build
	bash scripts/demo.sh

## Deploy the module into the running local cloud (scripts/deploy-local.sh; see its header).
deploy-local: build
	bash scripts/deploy-local.sh apply

## Every test: formatting, lints, unit, property and integration tests. The
## services the tests need are the project's own: scripts/pg.sh (a throwaway
## PostgreSQL) and scripts/localstack.sh (LocalStack in host mode), installed and
## started for the run and stopped after it unless they were already running;
## the summary line of scripts/test-binaries.py (libtest's format) stays the last output.
##
## Clippy's lints run while the workspace compiles: clippy-driver is the rustc of
## the workspace's own crates (cargo's RUSTC_WORKSPACE_WRAPPER, as `cargo clippy`
## sets it) with -D warnings, so every target `cargo clippy --workspace
## --all-targets -- -D warnings` checks (libs, their tests, bins, integration
## tests, examples; the bins have no test harness, there are no benches) is
## linted as the build and the test build compile it, and no dependency is
## compiled twice (clippy's own check build of them took about 3 minutes on
## 2 cores). `make lint` still runs `cargo clippy`. A later plain `cargo build`
## compiles the workspace's crates again (their compiler differs), not the
## dependencies.
test: export RUSTC_WORKSPACE_WRAPPER = clippy-driver
test: export CLIPPY_ARGS = -Dwarnings
# Every local cloud of the run (the tests', the walk-through's, github_app's)
# runs LocalStack from this one install (scripts/localstack.sh).
test: export LIVE_CI_VENV = $(LIVE_CI_WORK)/venv
test:
	# make lint's checks, in other places: clippy's in the build (above),
	# LocalStack's install (pip, the smoke suite's first step otherwise)
	# beside the build; the Terraform module's checks beside the test build (below).
	@echo "make test: scripts lint, $$(date -u +%T)"
	bash scripts/lint-scripts.sh
	$(CARGO) fmt --all --check
	# The lint gate is live: through the wrapper, a clippy lint fails a compile.
	bash scripts/check-lint-gate.sh
	# The whole workspace at once: a `-p` build resolves features for that
	# package alone, a different set, and compiles the dependencies again.
	@echo "make test: build (clippy -D warnings on the workspace's crates), with LocalStack's install beside it, $$(date -u +%T)"
	@log="$(LIVE_CI_WORK)/localstack-install.log"; mkdir -p "$(LIVE_CI_WORK)"; \
	bash scripts/localstack.sh install >"$$log" 2>&1 & install=$$!; \
	$(CARGO) build --locked --workspace --bins; built=$$?; \
	wait $$install; installed=$$?; cat "$$log"; \
	echo "make test: build ($$built) and LocalStack's install ($$installed) done, $$(date -u +%T)"; \
	[ $$built = 0 ] && [ $$installed = 0 ]
	@echo "make test: demo, $$(date -u +%T)"
	bash scripts/demo.sh >/dev/null
	@echo "demo: ok"
	# While the test binaries build, beside it: the smoke suite on the built
	# binaries (none of its tests may skip; its terraform test too) and the
	# Terraform module's checks (scripts/infra-check.sh); their output printed
	# whole after.
	@echo "make test: test build, with smoke and infra-check beside it, $$(date -u +%T)"
	@log="$(LIVE_CI_WORK)/smoke.log"; infra_log="$(LIVE_CI_WORK)/infra-check.log"; \
	LIVE_CI_SMOKE_TERRAFORM=1 bash scripts/local-cloud.sh smoke >"$$log" 2>&1 & smoke=$$!; \
	bash scripts/infra-check.sh >"$$infra_log" 2>&1 & infra=$$!; \
	$(CARGO) test --locked --workspace --no-run; built=$$?; \
	echo "make test: test build done ($$built), $$(date -u +%T)"; \
	wait $$infra; checked=$$?; cat "$$infra_log"; \
	echo "make test: infra-check done ($$checked), $$(date -u +%T)"; \
	wait $$smoke; passed=$$?; cat "$$log"; \
	echo "make test: smoke done ($$passed), $$(date -u +%T)"; \
	[ $$built = 0 ] || { echo "make test: the test build failed (above)" >&2; exit 1; }; \
	[ $$checked = 0 ] || { echo "make test: infra-check failed (above)" >&2; exit 1; }; \
	[ $$passed = 0 ] || { echo "make test: the smoke suite failed (above)" >&2; exit 1; }
	# Every command the documents give still runs as written (make targets,
	# scripts, terraform outputs, docker build args, the CLI's subcommands and flags).
	python3 scripts/check-doc-commands.py --self-test
	python3 scripts/check-doc-commands.py
	# The Lambda zip checker refuses what it must; the zips themselves are
	# checked when `make package` has built them.
	python3 scripts/check-lambda-zips.py --self-test $${CARGO_TARGET_DIR:-target}/debug/receiver
	@if [ -f $${CARGO_TARGET_DIR:-target}/lambda/receiver/bootstrap.zip ]; then \
	  python3 scripts/check-lambda-zips.py; \
	else echo "lambda zips: not built (make package), not checked"; fi
	# Every test binary, several at a time (scripts/test-binaries.py: whole
	# binaries, so per-binary set-up stays shared). The two e2e binaries that
	# deploy the module each have a local cloud of their own, so they run side
	# by side: pipeline the default one, github_app $(E2E_APP_WORK) on port
	# $(E2E_APP_PORT) (stopped after unless it already ran); both named --long,
	# so a fresh clone (no recorded durations) starts them first. Its summary
	# line is the last output.
	python3 scripts/test-binaries.py --self-test
	@echo "make test: tests, $$(date -u +%T)"
	$(CARGO) test --locked --workspace --doc
	# Beside the test binaries: the newcomer walk-through (docs/getting-started.md)
	# run literally, its sh blocks in order in one shell, with a local cloud of
	# its own (work dir and port: scripts/check-getting-started.sh); its output
	# printed whole after, before the test binaries' summary line.
	@was_up=0; bash scripts/localstack.sh status && was_up=1; \
	endpoint=$$(bash scripts/localstack.sh up) || exit 1; \
	app_work="$(E2E_APP_WORK)"; \
	app_up=0; LIVE_CI_WORK="$$app_work" bash scripts/local-cloud.sh status >/dev/null 2>&1 && app_up=1; \
	app=live-ci-e2e::github_app; \
	$(CARGO) build --locked --workspace --bins || exit 1; \
	log="$(LIVE_CI_WORK)/getting-started.log"; \
	echo "make test: getting-started beside the test binaries, $$(date -u +%T)"; \
	bash scripts/check-getting-started.sh >"$$log" 2>&1 & walk=$$!; \
	set -- --long live-ci-e2e::pipeline --long $$app --env "$$app:LIVE_CI_WORK=$$app_work" --env "$$app:LIVE_CI_LOCALSTACK_PORT=$(E2E_APP_PORT)" \
	  --env "$$app:LIVE_CI_AWS_ENDPOINT=http://127.0.0.1:$(E2E_APP_PORT)"; \
	echo "LIVE_CI_AWS_ENDPOINT=$$endpoint scripts/pg.sh with python3 scripts/test-binaries.py $$* -- --locked --workspace"; \
	CARGO=$(CARGO) LIVE_CI_REQUIRE_SES_V2=1 LIVE_CI_AWS_ENDPOINT=$$endpoint bash scripts/pg.sh with \
	  python3 scripts/test-binaries.py "$$@" -- --locked --workspace >"$(LIVE_CI_WORK)/tests.log" 2>&1; rc=$$?; \
	[ $$was_up = 1 ] || bash scripts/localstack.sh down 2>/dev/null; \
	[ $$app_up = 1 ] || LIVE_CI_WORK="$$app_work" bash scripts/local-cloud.sh down >/dev/null 2>&1; \
	wait $$walk; walked=$$?; cat "$$log"; \
	echo "make test: getting-started done ($$walked), $$(date -u +%T)"; \
	cat "$(LIVE_CI_WORK)/tests.log"; \
	[ $$walked = 0 ] || echo "make test: the walk-through failed (its output above)" >&2; \
	[ $$rc = 0 ] && [ $$walked = 0 ]

## The project's LocalStack for the local cloud (tests start it themselves too).
localstack-up:
	bash scripts/localstack.sh up

localstack-down:
	bash scripts/localstack.sh down

## The Terraform module's checks run beside clippy (neither waits on the other;
## the infra log is printed whole after).
lint:
	@echo "make lint: scripts, $$(date -u +%T)"
	bash scripts/lint-scripts.sh
	$(CARGO) fmt --all --check
	@echo "make lint: clippy, with infra-check beside it, $$(date -u +%T)"
	@log="$(LIVE_CI_WORK)/infra-check.log"; mkdir -p "$(LIVE_CI_WORK)"; \
	bash scripts/infra-check.sh >"$$log" 2>&1 & infra=$$!; \
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings; linted=$$?; \
	wait $$infra; checked=$$?; cat "$$log"; \
	echo "make lint: clippy ($$linted) and infra-check ($$checked) done, $$(date -u +%T)"; \
	[ $$linted = 0 ] && [ $$checked = 0 ]

## The Terraform module: fmt, validate (offline provider mirror), checkov.
infra-check:
	@echo "make infra-check: $$(date -u +%T)"
	bash scripts/infra-check.sh

## The Lambda zips the Terraform module deploys (target/lambda/<name>/bootstrap.zip)
## for provided.al2023 (zig links against glibc 2.34), then checks each bootstrap:
## ELF, x86-64, highest GLIBC symbol version <= 2.34. Release builds, about 20
## minutes on 2 cores. `make test` checks the zips when they exist.
package:
	bash scripts/package.sh
	python3 scripts/check-lambda-zips.py

package-check:
	python3 scripts/check-lambda-zips.py

## The e2e pipeline once with the very zips of `make package` deployed into the
## local cloud (instead of the debug binaries' wrapper zips).
e2e-release: package
	$(CARGO) build --locked --workspace --bins
	LIVE_CI_LAMBDA_ZIPS=$${CARGO_TARGET_DIR:-$(abspath target)}/lambda bash scripts/pg.sh with \
	  $(CARGO) test --locked -p live-ci-e2e --test pipeline

fmt:
	$(CARGO) fmt --all

## Benchmarks that print figures (release builds).
bench:
	$(CARGO) run --locked --release -p live-ci-terragrunt --example bench_scheduler
	$(CARGO) run --locked --release -p live-ci-terragrunt --example bench_discovery
	$(CARGO) run --locked --release -p live-ci-cli --example bench_affected
	bash scripts/pg.sh with $(CARGO) run --locked --release -p live-ci-metadb --example bench_claim
	bash scripts/pg.sh with $(CARGO) run --locked --release -p live-ci-metadb --example bench_queue

## The pipeline's own cost per unit through the local cloud (not part of make test):
## a generated repo of 20 and 100 units in 4 accounts, max_parallel 4 and 16, every
## unit approved through its mail; prints makespan, terraform time, overhead per
## unit, start latency and Lambda durations. BENCH_PIPELINE_ARGS="--cases 20x4" narrows it;
## BENCH_PROFILE=release deploys release builds of the Lambdas and the task (what AWS runs).
BENCH_PROFILE ?= debug
bench-pipeline:
	$(CARGO) build --locked --workspace --bins
	$(CARGO) build --locked --workspace --bins --profile $(subst debug,dev,$(BENCH_PROFILE))
	LIVE_CI_PROFILE=$(BENCH_PROFILE) $(CARGO) run --locked -q --bin live-ci-bench-pipeline -- $(BENCH_PIPELINE_ARGS)

clean: localstack-down
	-bash scripts/pg.sh down
	rm -rf $(WORK)
