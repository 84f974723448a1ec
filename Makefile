# live-ci: `make demo` runs the main job on a local default, `make test` runs every test.
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never
WORK ?= .work

.PHONY: all build demo test lint fmt bench clean

all: build

build:
	$(CARGO) build --locked --workspace

## The main job on the sample live repo: discovery, change detection, the deployment plan.
demo: build
	bash scripts/demo.sh

## Every test: formatting, lints, unit, property and integration tests. The metadb
## tests need PostgreSQL: scripts/pg.sh starts a throwaway one (stopped afterwards
## unless it was already running).
test: lint
	bash scripts/demo.sh >/dev/null
	@echo "demo: ok"
	bash scripts/pg.sh with $(CARGO) test --locked --workspace

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

## Benchmarks that print figures (release builds).
bench:
	$(CARGO) run --locked --release -p live-ci-core --example bench_scheduler
	$(CARGO) run --locked --release -p live-ci-core --example bench_discovery
	$(CARGO) run --locked --release -p live-ci-cli --example bench_affected
	bash scripts/pg.sh with $(CARGO) run --locked --release -p live-ci-metadb --example bench_claim

clean:
	-bash scripts/pg.sh down
	rm -rf $(WORK)
