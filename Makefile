# ngc-paddle: build, test and lint the monthly PaddlePaddle containers.
#   make image [RELEASE=YY.MM] [FLAVOR=cpu|gpu] [SOURCES="pypi=URL nvidia=URL ..."]
#   make test | make lint | make clean
# RELEASE defaults to the newest manifest in releases/, FLAVOR to that manifest's default_flavor.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RELEASE ?=
FLAVOR ?=
SOURCES ?=
PYTEST_ARGS ?=

build_args = $(if $(RELEASE),--release $(RELEASE)) $(if $(FLAVOR),--flavor $(FLAVOR)) \
             $(foreach s,$(SOURCES),--source $(s))

.PHONY: image test unit integration lint toolchain validate scan release bake-print bench-build bench-validate bench-input \
        bench-overhead bench-threads clean distclean help

help:
	@sed -n '2,5p' Makefile | sed 's/^# //'

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

## Docker engine + buildx (installed and started where missing; see toolchain/ensure-engine.sh)
toolchain:
	bash toolchain/ensure-engine.sh

## Build RELEASE/FLAVOR layer by layer; the release tag moves only after a smoke test
image: $(BIN)/.installed toolchain
	$(BIN)/ngc-paddle build $(build_args)

## Unit tests (seconds), then integration tests that build and run real images
test: unit integration

unit: $(BIN)/.installed
	$(BIN)/pytest tests/unit -n 2 $(PYTEST_ARGS)

integration: $(BIN)/.installed toolchain
	$(BIN)/pytest tests/integration $(PYTEST_ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/hadolint --config .hadolint.yaml Dockerfile layers/*/Dockerfile
	$(BIN)/ngc-paddle manifest check

LATEST = $(shell ls releases | sed -n 's/\.yaml$$//p' | sort | tail -n1)
IMAGE_DEFAULT = $(or $(IMAGE),ngc-paddle:$(or $(RELEASE),$(LATEST))-$(or $(FLAVOR),cpu))
# IMAGE, or RELEASE/FLAVOR when either is given, else nothing (the CLI then takes the newest default flavor)
IMAGE_ARG = $(if $(or $(IMAGE),$(RELEASE),$(FLAVOR)),$(IMAGE_DEFAULT))

## Validate IMAGE (default: RELEASE/FLAVOR, else the newest release's default flavor) from this host.
## Exit 3: NOT PROVEN (a GPU flavor whose GPU checks could not run here).
validate: $(BIN)/.installed toolchain
	$(BIN)/ngc-paddle validate $(IMAGE_ARG)

## Security scan gate + CycloneDX SBOM of IMAGE (default: RELEASE/FLAVOR, else the newest default flavor)
## Exit 1: blocked; 3: vulnerabilities NOT RUN (no vulnerability source for an ecosystem, no waiver).
## OSV_DIR=folder of OSV records, DB_REPOSITORY=trivy DB mirror, POLICY=policy file.
scan: $(BIN)/.installed toolchain
	$(BIN)/ngc-paddle scan $(IMAGE_ARG) $(if $(OSV_DIR),--osv-dir $(OSV_DIR))$(if $(DB_REPOSITORY), --db-repository $(DB_REPOSITORY))$(if $(POLICY), --policy $(POLICY))

## Monthly release: build, validate, benchmark and scan gates, SBOM, notes, push (REGISTRY=host:port).
## ACCEPT_UNPROVEN="reason" pushes flavors whose gates are NOT PROVEN; the notes print the reason.
release: $(BIN)/.installed toolchain
	$(BIN)/ngc-paddle release $(RELEASE) $(if $(FLAVOR),--flavor $(FLAVOR)) $(if $(REGISTRY),--registry $(REGISTRY)) \
	  $(if $(ACCEPT_UNPROVEN),--accept-unproven "$(ACCEPT_UNPROVEN)")

## Print the resolved bake definition of RELEASE (structure from docker-bake.hcl + manifest args)
bake-print: $(BIN)/.installed
	@f=$$($(BIN)/ngc-paddle bake-file $(RELEASE)) && rel=$$(basename $$f .json) && \
	  RELEASE=$$rel docker buildx bake -f docker-bake.hcl -f $$f --print $(or $(FLAVOR),default)

## Cold build, no-change rebuild and top-layer rebuild, with image size vs installed payload
bench-build: $(BIN)/.installed toolchain
	$(BIN)/python benchmarks/build/bench_build.py $(build_args)

## Validation suite: serial vs parallel wall time
bench-validate: $(BIN)/.installed toolchain
	$(BIN)/python benchmarks/validation/bench_validate.py $(IMAGE)

## In the image: DALI vs Paddle DataLoader input rate, harness vs bare-loop throughput, one thread vs the default
bench-input: toolchain
	docker run --rm --shm-size 1g -e NGC_PADDLE_QUIET=1 -w /opt/ngc-paddle $(IMAGE_DEFAULT) python -W ignore -m benchmarks.rn50.bench_input
	docker run --rm -e NGC_PADDLE_QUIET=1 -w /opt/ngc-paddle $(IMAGE_DEFAULT) python -W ignore -m benchmarks.rn50.bench_input

bench-overhead: toolchain
	docker run --rm -e NGC_PADDLE_QUIET=1 -w /opt/ngc-paddle $(IMAGE_DEFAULT) python -W ignore -m benchmarks.harness.bench_overhead

bench-threads: toolchain
	docker run --rm -e NGC_PADDLE_QUIET=1 -w /opt/ngc-paddle $(IMAGE_DEFAULT) python -W ignore -m benchmarks.harness.bench_threads \
	  --repeats $(or $(REPEATS),2)

clean:
	rm -rf build
	-docker image ls --format '{{.Repository}}:{{.Tag}}' ngc-paddle-layers | xargs -r docker image rm

distclean: clean
	rm -rf $(VENV) *.egg-info
