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

## Every test: formatting, lints, unit, property and integration tests.
test: lint
	bash scripts/demo.sh >/dev/null
	@echo "demo: ok"
	$(CARGO) test --locked --workspace

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

clean:
	rm -rf $(WORK)
