# ngc-paddle: build, test and lint the monthly PaddlePaddle containers.
#   make image [RELEASE=YY.MM] [FLAVOR=cpu|gpu] [PLATFORMS=linux/amd64 (default: all of the flavor's, one index)] [SOURCES="pypi=URL nvidia=URL ..."] [FORCE=1] [CACHE_REGISTRY=host:port]
#   make lock [RELEASE=YY.MM] [FLAVOR=...] [PLATFORMS=linux/arm64] [SOURCES=...]   (resolve and write each platform's lock)
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

.PHONY: image lock test test-arm64 unit integration lint toolchain fleet-toolchain validate scan release gates notes bake-print \
        perf-build perf-arm64-build perf-repro perf-cache perf-validate perf-input perf-overhead perf-threads perf-gate-power perf-ab-power perf-stop perf-scan perf-fleet bench-compare perf-tests mutation clean \
        distclean help

help:
	@sed -n '2,5p' Makefile | sed 's/^# //'

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

## Docker engine + buildx (installed and started where missing; see toolchain/ensure-engine.sh)
toolchain:
	bash toolchain/ensure-engine.sh

## The fan-out's test places: a one-node Slurm cluster on 127.0.0.1 (munge, slurmctld, slurmd) and OpenSSH's sshd
fleet-toolchain:
	bash toolchain/ensure-slurm.sh
	bash toolchain/ensure-sshd.sh

## Build RELEASE/FLAVOR layer by layer, each of its platforms (or PLATFORMS), then tag them as one image index; the
## release tag moves only after a smoke test.
## Nothing changed (the images' inputs-digest labels equal today's inputs): answers from the labels; FORCE=1 builds.
image: $(BIN)/.installed toolchain
	$(BIN)/ngc-paddle build $(build_args) $(foreach p,$(PLATFORMS),--platform $(p)) $(if $(FORCE),--force) $(if $(CACHE_REGISTRY),--cache-registry $(CACHE_REGISTRY))

## Resolve RELEASE's flavors (all, or FLAVOR) and write their locks beside the manifest, one per platform (all of each
## flavor's, or PLATFORMS); builds install only these
lock: $(BIN)/.installed toolchain
	$(BIN)/ngc-paddle lock $(RELEASE) $(if $(FLAVOR),--flavor $(FLAVOR)) $(foreach s,$(SOURCES),--source $(s)) $(foreach p,$(PLATFORMS),--platform $(p))

## Unit tests (seconds), then integration tests that build and run real images
test: unit integration

unit: $(BIN)/.installed
	$(BIN)/pytest tests/unit -n 2 --durations=5 $(if $(JUNIT),--junitxml=$(JUNIT).xml) $(PYTEST_ARGS)

## Two phases: the tests whose verdicts need a quiet CPU (a benchmark's efficiency gate decides: the `alone` marker,
## tests/integration/conftest.py) run one at a time, after the others, which run on ITEST_WORKERS xdist workers
## (default 2; 0: one process), each file's tests on one worker, the files with the longest recorded times first
## (--no-loadscope-reorder keeps conftest's order). Each phase ends with its slowest tests (pytest --durations).
## PYTEST_ARGS that select nothing in one phase leave that phase's "no tests ran" (exit 5) unremarked; alone, never.
ITEST_WORKERS ?= 2
ITEST = $(BIN)/pytest tests/integration --durations=20
ITEST_EXIT = || { rc=$$?; [ $$rc = 5 ] && [ -n "$(PYTEST_ARGS)" ] || exit $$rc; }
integration: $(BIN)/.installed toolchain fleet-toolchain
	bash toolchain/ensure-disk.sh
	$(ITEST) -m "not alone and not emulated" -n $(ITEST_WORKERS) --dist loadfile --no-loadscope-reorder $(if $(JUNIT),--junitxml=$(JUNIT)-parallel.xml) \
	  $(PYTEST_ARGS) $(ITEST_EXIT)
	$(ITEST) -m "alone and not emulated" $(if $(JUNIT),--junitxml=$(JUNIT)-alone.xml) \
	  $(PYTEST_ARGS) $(ITEST_EXIT)

## The arm64 image built, validated and benchmarked under qemu (tests/integration/test_arm64.py): over 30 minutes
## on a 2-core machine, so not part of `make test`
test-arm64: $(BIN)/.installed toolchain
	bash toolchain/ensure-qemu.sh
	$(ITEST) -m emulated $(PYTEST_ARGS)

## Both suites timed per file and per test, with the machine and its CPU kind, into docs/measurements.md beside the
## previous run's figures (docs/test-times.json); a run with failures records nothing
perf-tests: $(BIN)/.installed toolchain fleet-toolchain
	bash toolchain/ensure-disk.sh
	$(BIN)/python -m perf.suite_times

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/hadolint --config .hadolint.yaml Dockerfile layers/*/Dockerfile
	$(BIN)/lint-imports --no-logo
	$(BIN)/ngc-paddle manifest check

# The image a target means: IMAGE, else RELEASE/FLAVOR (each defaulting from the manifests), else the newest
# release's default flavor; resolved and checked against the manifest by ngc_paddle.image_ref.
IMAGE_REF = $(BIN)/python -m ngc_paddle.image_ref --image "$(IMAGE)" --release "$(RELEASE)" --flavor "$(FLAVOR)"

## Validate IMAGE (default: RELEASE/FLAVOR, else the newest release's default flavor) from this host.
## Exit 3: NOT PROVEN (a GPU flavor whose GPU checks could not run here).
validate: $(BIN)/.installed toolchain
	img=$$($(IMAGE_REF)) && $(BIN)/ngc-paddle validate "$$img"

## Security scan gate + CycloneDX SBOM of IMAGE (default: RELEASE/FLAVOR, else the newest default flavor); an image
## index: each platform (PLATFORMS=linux/arm64: those only), the worst verdict the exit.
## Exit 1: blocked; 3: vulnerabilities NOT RUN (no vulnerability source for an ecosystem, no waiver).
## OSV_DIR=folder of OSV records, DB_REPOSITORY=trivy DB mirror, POLICY=policy file.
scan: $(BIN)/.installed toolchain
	img=$$($(IMAGE_REF)) && $(BIN)/ngc-paddle scan "$$img" $(if $(OSV_DIR),--osv-dir $(OSV_DIR))$(if $(DB_REPOSITORY), --db-repository $(DB_REPOSITORY))$(if $(POLICY), --policy $(POLICY))$(foreach p,$(PLATFORMS), --platform $(p))

## Scan gate on IMAGE (default: RELEASE/FLAVOR, else the newest default flavor): cold scan, rescan after a top-layer
## change and trivy alone, alternating, REPEATS times; figures into docs/measurements.md
perf-scan: $(BIN)/.installed toolchain
	img=$$($(IMAGE_REF) --require-built) && $(BIN)/python -m perf.scan.bench_gate "$$img" --repeats $(or $(REPEATS),2)

## Monthly release: build, validate, benchmark and scan gates, SBOM, notes, push (REGISTRY=host:port).
## FLAVOR="cpu gpu-cu118" or FLAVOR=all (every flavor this host can build); SOURCES as for make image.
## ACCEPT_UNPROVEN="reason" pushes flavors whose gates are NOT PROVEN; the notes print the reason.
## KEY=cosign.key (or COSIGN_KEY, with COSIGN_PASSWORD) signs the attestations; NO_ATTEST=1 releases unsigned.
release: $(BIN)/.installed toolchain
	$(BIN)/ngc-paddle release $(RELEASE) $(foreach f,$(FLAVOR),--flavor $(f)) $(foreach s,$(SOURCES),--source $(s)) \
	  $(if $(REGISTRY),--registry $(REGISTRY)) $(if $(ACCEPT_UNPROVEN),--accept-unproven "$(ACCEPT_UNPROVEN)") \
	  $(if $(FLEET),--fleet $(FLEET)) $(if $(KEY),--key $(KEY)) $(if $(NO_ATTEST),--no-attest)

## A built release's validation and benchmark gates per hardware profile of FLEET (default: this host), by digest.
## Exit 1: a FAIL; 3: NOT RUN / NOT PROVEN / N/A on a profile. See docs/fleets.md.
gates: $(BIN)/.installed toolchain
	$(BIN)/ngc-paddle gates $(RELEASE) $(foreach f,$(FLAVOR),--flavor $(f)) $(if $(FLEET),--fleet $(FLEET)) \
	  $(if $(REGISTRY),--registry $(REGISTRY))

## Re-render release-notes/RELEASE.md and support-matrix.md from the committed inputs (release-notes/inputs/)
notes: $(BIN)/.installed
	$(BIN)/ngc-paddle release notes $(RELEASE)

## Print the resolved bake definition of RELEASE (structure from docker-bake.hcl + manifest args)
bake-print: $(BIN)/.installed
	@f=$$($(BIN)/ngc-paddle bake-file $(RELEASE)) && rel=$$(basename $$f .json) && \
	  RELEASE=$$rel docker buildx bake -f docker-bake.hcl -f $$f --print $(or $(FLAVOR),default)

## The fan-out's cost: the same gates through Slurm and on this host (overhead, target <= 5 %), and N profiles
## run at once against their sum (needs the image built and `make fleet-toolchain`)
perf-fleet: $(BIN)/.installed toolchain fleet-toolchain
	$(BIN)/python -m perf.fleet.bench_fanout $(build_args)

## Cold build, no-change rebuild and top-layer rebuild, with image size vs installed payload
perf-build: $(BIN)/.installed toolchain
	$(BIN)/python -m perf.image_build.bench_build $(build_args)

## The arm64 build on this host (os and suite layers under qemu): cold (BuildKit --no-cache, or COLD_REPORT=the
## build.json of an earlier cold arm64 build), warm (from the cache, new tags) and no change
perf-arm64-build: $(BIN)/.installed toolchain
	$(BIN)/python -m perf.image_build.bench_arm64 $(if $(RELEASE),--release $(RELEASE)) $(if $(COLD_REPORT),--cold-report $(COLD_REPORT),--cold)

## Reproducibility: two builds with --no-cache (RELEASE/FLAVOR, UP_TO=layer to stop early; SECOND_ENGINE=1: B on a second
## engine instance; PLATFORMS=linux/arm64: the flavor's image of that platform, every layer, under qemu as make image
## builds it), image digests, packages and layers compared
perf-repro: $(BIN)/.installed toolchain
	$(BIN)/python -m perf.image_build.bench_repro $(build_args) $(if $(UP_TO),--up-to $(UP_TO)) $(if $(SECOND_ENGINE),--second-engine) \
	  $(if $(PLATFORMS),--platform $(PLATFORMS))

## A build cache shared between hosts: this engine builds with CACHE_REGISTRY (default 127.0.0.1:5000), a fresh second
## engine instance builds the same flavor from the registry's cache alone; wall times and steps rebuilt per layer
perf-cache: $(BIN)/.installed toolchain
	$(BIN)/python -m perf.image_build.bench_cache $(if $(RELEASE),--release $(RELEASE)) $(if $(FLAVOR),--flavor $(FLAVOR)) \
	  $(if $(CACHE_REGISTRY),--registry $(CACHE_REGISTRY))

## Validation suite: serial vs parallel wall time
perf-validate: $(BIN)/.installed toolchain
	$(BIN)/python -m perf.validation.bench_validate $(IMAGE)

## In the image: DALI vs Paddle DataLoader input rate, harness vs bare-loop throughput, one thread vs the default.
## The image is IMAGE, else RELEASE/FLAVOR, else the newest release's default flavor; one that is not built is an
## error naming the make command that builds it (never a pull from a registry).
RUN_IMAGE = img=$$($(IMAGE_REF) --require-built) && docker run --rm -e NGC_PADDLE_QUIET=1 -w /opt/ngc-paddle

perf-input: $(BIN)/.installed toolchain
	$(RUN_IMAGE) --shm-size 1g "$$img" python -W ignore -m benchmarks.rn50.bench_input
	$(RUN_IMAGE) "$$img" python -W ignore -m benchmarks.rn50.bench_input

perf-overhead: $(BIN)/.installed toolchain
	$(RUN_IMAGE) "$$img" python -W ignore -m benchmarks.rn50.bench_overhead

perf-threads: $(BIN)/.installed toolchain
	$(RUN_IMAGE) "$$img" python -W ignore -m benchmarks.harness.bench_threads --repeats $(or $(REPEATS),2)

## Each CPU gate healthy and with a planted 2x slowdown per phase (VARIANTS=healthy,slowed-train,slowed-infer), idle and
## busy (LOADS), per CPU kind (ISAS=native,avx2) and model (MODELS=rn50,hgnet), RUNS rounds (default 10): prints the
## false-fail and miss rates (target 0 and 0) and records them in docs/measurements.md (a narrowed run: its own section).
perf-gate-power: $(BIN)/.installed toolchain
	img=$$($(IMAGE_REF) --require-built) && $(BIN)/python -m perf.bench_gate_power "$$img" --runs $(or $(RUNS),10) $(if $(ISAS),--isas $(ISAS)) \
	  $(if $(MODELS),--models $(MODELS)) $(if $(LOADS),--loads $(LOADS)) $(if $(VARIANTS),--variants $(VARIANTS)) \
	  $(if $(MODE),--mode $(MODE))

## The A/B gate's power: IMAGE against itself through the release's rounds, healthy and with a planted slowdown of the
## candidate (train 2x, infer 2x, 1.2x; 1.1x and 1.05x: how fine it sees), rounds until decided (a slowed metric: MAX_ROUNDS, default 30; the others:
## PASS_ROUNDS, default 10), idle and busy (LOADS), per CPU kind (ISAS=native,avx2), MODEL (rn50|hgnet|all; default rn50),
## RUNS repetitions (default 1): misses, false fails and the rounds each FAIL took; figures into docs/measurements.md (a
## narrowed run: its own section; 60-75 min per CPU kind here).
perf-ab-power: $(BIN)/.installed toolchain
	img=$$($(IMAGE_REF) --require-built) && $(BIN)/python -m perf.bench_ab_power "$$img" --runs $(or $(RUNS),1) \
	  $(if $(ISAS),--isas $(ISAS)) $(if $(MODEL),--model $(MODEL)) $(if $(LOADS),--loads $(LOADS)) \
	  $(if $(VARIANTS),--variants $(VARIANTS)) $(if $(MAX_ROUNDS),--max-rounds $(MAX_ROUNDS)) \
	  $(if $(PASS_ROUNDS),--pass-rounds $(PASS_ROUNDS))

## A/B on this host: IMAGE (or RELEASE/FLAVOR's image) against REFERENCE (default: the previous release's image of its
## flavor, by digest from REGISTRY), interleaved in ROUNDS rounds of MODEL (rn50|hgnet|all); SMOKE=1: seconds-long rounds
bench-compare: $(BIN)/.installed toolchain
	img=$$($(IMAGE_REF) --require-built) && $(BIN)/ngc-paddle bench-compare "$$img" \
	  $(if $(REFERENCE),--reference "$(REFERENCE)") $(if $(MODEL),--model $(MODEL)) $(if $(ROUNDS),--rounds $(ROUNDS)) \
	  $(if $(SMOKE),--smoke) $(if $(REGISTRY),--registry $(REGISTRY)) $(if $(OUTPUT),--output "$(OUTPUT)")

## Time how the image's commands stop: docker stop, timeout 40, Ctrl-C (RUNS rounds, default 3)
perf-stop: $(BIN)/.installed toolchain
	img=$$($(IMAGE_REF) --require-built) && $(BIN)/python -m perf.bench_stop "$$img" --runs $(or $(RUNS),3)

## Mutation testing of the decision modules ([tool.mutmut] in pyproject.toml): mutmut plants bugs there and runs the
## unit tests that reach each one; prints the score per module group (RECORD=1: into docs/measurements.md).
## MUTANTS='ngc_paddle.lock.check.*' (mutmut names, globs) reruns those only; results are kept in mutants/ between
## runs (a mutant already decided is not run again): rm -rf mutants for a fresh run. About 2 hours on 2 cores.
mutation: $(BIN)/.installed
	set -f; start=$$(date +%s) && $(BIN)/mutmut run $(MUTANTS) && \
	$(BIN)/python -m perf.mutation $(if $(RECORD),--record --wall $$(( $$(date +%s) - start )))

clean:
	rm -rf build
	-docker image ls --format '{{.Repository}}:{{.Tag}}' ngc-paddle-layers | xargs -r docker image rm

distclean: clean
	rm -rf $(VENV) *.egg-info mutants
