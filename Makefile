# biotool sandbox: build, test, demo and bench targets. Every target works from a fresh clone
# on a Debian 12 host with docker (see .ci/run for what CI installs first).
#
#   make base             Debian bookworm base image from debootstrap (no registry needed)
#   make wheels           the wheelhouse the image installs from (no index inside the build)
#   make image            biotool-sandbox:latest (target sandbox) and biotool-egress:latest
#   make image-cuda       biotool-sandbox:cuda: the same with PyPI's CUDA torch (several GB)
#   make test-cuda        the CUDA image's tests on this CPU (marker cuda; not part of make test)
#   make test-gvisor      the escape matrix, isolation, toolbox and family tests with the sandbox
#                         under gVisor (runtime runsc; .ci/run runs it after make test)
#   make test-podman      the offline forms under rootless Podman as a non-root user (by hand)
#   make test             unit tests (one pytest-xdist worker per core), the image, the image tests
#   make test-harbor      Harbor's own CLI (pinned) from its runner image runs the oracle, nop and
#                         cheating agents on the Harbor tasks against the enforced stack
#   make harbor-runner    the Harbor runner image (Debian trixie, image/harbor/HARBOR_VERSION)
#   make demo             the enforced stack running a short agent session (biotool-sandbox demo)
#   make bench            --help time in the container, image size, build time
#   make cuda-lock-check  proves image/requirements-cuda.lock resolves (no GPU, no download;
#                         needs the package index, so not part of make test: .ci/run runs it)
#   make sif              Apptainer image from the built docker image
#   make egress-sif       the egress image's SIF: an HPC episode's own gate (docs/hpc.md)
#   make repro-check      rebuilds HEAD from a clean clone (no layer cache) and compares files
#   make lock             re-resolve both lock files from pyproject.toml
#   make pins             fetch every production source once and write refs/pins.lock.toml

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := image

PYTHON ?= python3
TORCH_VARIANT ?= cpu
# The CUDA image has its own tag, which the gpu compose profile and `up --mode gpu` run.
ifeq ($(TORCH_VARIANT),cuda)
BIOTOOL_IMAGE ?= biotool-sandbox:cuda
endif
BIOTOOL_IMAGE ?= biotool-sandbox:latest
BIOTOOL_CUDA_IMAGE ?= biotool-sandbox:cuda
BIOTOOL_EGRESS_IMAGE ?= biotool-egress:latest
# The name build.json records (a build input: two builds compare equal only under one name).
IMAGE_NAME ?= $(BIOTOOL_IMAGE)
BIOTOOL_STAGE ?= demo
# BIOTOOL_TOFU=1 stages production items the lock does not pin (trust on first use).
# BIOTOOL_SOURCE_MIRROR (TEST ONLY) and BUILD_NETWORK=host: fetch sources through a local
# fake source server (tests/image/test_production_stage.py).
BIOTOOL_TOFU ?=
BIOTOOL_SOURCE_MIRROR ?=
BUILD_NETWORK ?=
# Extra docker build flags (make repro-check: --no-cache).
DOCKER_BUILD_FLAGS ?=
BASE_TAG ?= biotool-base:bookworm
# Empty: the recipe picks biotool-base:bookworm if present, else debian:bookworm-slim if it
# can be pulled, else builds the base with debootstrap (make base).
BASE_IMAGE ?=
# Empty: pip's own index (its configuration, or its built-in default under --isolated).
PYPI_INDEX ?=
INDEX_OPT := $(if $(PYPI_INDEX),--index-url $(PYPI_INDEX))
WHEELHOUSE := wheelhouse
OUT := out
LOCK := image/requirements-$(TORCH_VARIANT).lock
# The engine here is 20.10: the classic builder, which the Dockerfile is written for.
export DOCKER_BUILDKIT := 0
# rpy2-rinterface's sdist builds (and says its metadata) in cffi ABI mode, with no R on the
# host: the image's R is found at run time (image/lockfile.py sets the same).
export RPY2_CFFI_MODE := ABI
# Reproducible project wheel: same sources, same bytes, so docker's layer cache holds.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 315532800)
export SOURCE_DATE_EPOCH
REVISION ?= $(shell if git rev-parse -q --verify HEAD >/dev/null 2>&1; then \
    echo "$$(git rev-parse --short=12 HEAD)$$(git diff --quiet HEAD -- || echo -dirty)"; \
    else echo unknown; fi)

ifeq ($(TORCH_VARIANT),cpu)
# This host's pip config (find-links /opt/wheels) supplies torch's +cpu build.
PIP_FOR_VARIANT := $(PYTHON) -m pip
else ifeq ($(TORCH_VARIANT),cuda)
# Ignore host pip config so PyPI's CUDA torch, not a local +cpu wheel, is fetched.
PIP_FOR_VARIANT := $(PYTHON) -m pip --isolated
PIP_VARIANT_OPTS := $(INDEX_OPT) $(shell test -f /etc/ssl/certs/ca-certificates.crt && echo --cert /etc/ssl/certs/ca-certificates.crt)
else
$(error TORCH_VARIANT must be cpu or cuda, not $(TORCH_VARIANT))
endif

.PHONY: base wheels lock-current project-wheel image image-cuda lock cuda-lock-check pins \
        sif egress-sif docker-archive test test-unit test-image test-gvisor test-podman test-cuda demo bench clean \
        repro-check test-harbor harbor-runner hpc-node test-apptainer

base:
	image/base/build.sh $(BASE_TAG)

# ---------------------------------------------------------------- wheelhouse

wheels: lock-current $(WHEELHOUSE)/$(TORCH_VARIANT)/.complete project-wheel

# A requirement added to pyproject.toml must reach the lock before an image is built.
lock-current:
	$(PYTHON) image/lockfile.py current $(LOCK)

# Every pinned dependency as a wheel; mappy has no wheel on PyPI and is compiled here.
$(WHEELHOUSE)/$(TORCH_VARIANT)/.complete: $(LOCK)
	rm -rf $(WHEELHOUSE)/$(TORCH_VARIANT).partial
	mkdir -p $(WHEELHOUSE)/$(TORCH_VARIANT).partial
	if [ -d $(WHEELHOUSE)/$(TORCH_VARIANT) ]; then \
	    cp -l $(WHEELHOUSE)/$(TORCH_VARIANT)/*.whl $(WHEELHOUSE)/$(TORCH_VARIANT).partial/ 2>/dev/null || true; fi
	$(PIP_FOR_VARIANT) wheel --no-deps $(PIP_VARIANT_OPTS) \
	    --find-links $(WHEELHOUSE)/$(TORCH_VARIANT).partial \
	    -r $(LOCK) -w $(WHEELHOUSE)/$(TORCH_VARIANT).partial
	# Drop wheels of versions the lock no longer pins, so the build context stays small.
	$(PYTHON) image/lockfile.py prune $(LOCK) $(WHEELHOUSE)/$(TORCH_VARIANT).partial
	# The pins alone travel with the wheels: a comment edit must not rebuild the image.
	grep -v '^#' $(LOCK) > $(WHEELHOUSE)/$(TORCH_VARIANT).partial/requirements.lock
	rm -rf $(WHEELHOUSE)/$(TORCH_VARIANT)
	mv $(WHEELHOUSE)/$(TORCH_VARIANT).partial $(WHEELHOUSE)/$(TORCH_VARIANT)
	touch $@

# The project itself, rebuilt every time (cheap); byte-identical when sources are unchanged.
project-wheel:
	rm -rf $(WHEELHOUSE)/project.partial
	$(PYTHON) -m pip wheel --no-deps --no-build-isolation --no-index -q \
	    -w $(WHEELHOUSE)/project.partial .
	rm -rf build $(WHEELHOUSE)/project
	mv $(WHEELHOUSE)/project.partial $(WHEELHOUSE)/project

lock:
	$(PYTHON) image/lockfile.py lock cpu
	$(PYTHON) image/lockfile.py lock cuda

# Resolve the CUDA lock against PyPI as a clean machine would, reading wheel metadata only.
cuda-lock-check:
	mkdir -p $(OUT)
	$(PYTHON) -m pip --isolated install --dry-run --ignore-installed --quiet \
	    $(INDEX_OPT) \
	    $$(test -f /etc/ssl/certs/ca-certificates.crt && echo --cert /etc/ssl/certs/ca-certificates.crt) \
	    --report $(OUT)/cuda-lock-report.json -r image/requirements-cuda.lock
	$(PYTHON) image/lockfile.py check $(OUT)/cuda-lock-report.json image/requirements-cuda.lock

# ---------------------------------------------------------------- pins

# Run on a host that reaches the sources, then commit refs/pins.lock.toml (PINS_ONLY=NAME
# pins one item; the others keep their pins).
PINS_SETS ?= production
PINS_ONLY ?=
pins:
	PYTHONPATH=entrypoints $(PYTHON) -m biotool.staging pin --refs refs --sets $(PINS_SETS) \
	    $(foreach n,$(PINS_ONLY),--only $(n))

# ---------------------------------------------------------------- images

image: wheels
	mkdir -p $(OUT)
	base="$(BASE_IMAGE)"; \
	if [ -z "$$base" ]; then base=$$(BASE_TAG=$(BASE_TAG) image/base/select.sh); fi; \
	echo "image: base $$base, torch $(TORCH_VARIANT), revision $(REVISION)"; \
	args=(--build-arg BASE_IMAGE=$$base --build-arg TORCH_VARIANT=$(TORCH_VARIANT) \
	      --build-arg BIOTOOL_STAGE=$(BIOTOOL_STAGE) --build-arg REVISION=$(REVISION) \
	      --build-arg IMAGE_NAME=$(IMAGE_NAME) --build-arg SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH)); \
	if [ -n "$(BIOTOOL_TOFU)" ]; then args+=(--build-arg BIOTOOL_TOFU=$(BIOTOOL_TOFU)); fi; \
	if [ -n "$(BIOTOOL_SOURCE_MIRROR)" ]; then args+=(--build-arg BIOTOOL_SOURCE_MIRROR=$(BIOTOOL_SOURCE_MIRROR)); fi; \
	if [ -n "$(BUILD_NETWORK)" ]; then args+=(--network $(BUILD_NETWORK)); fi; \
	t0=$$(date +%s.%N); \
	docker build "$${args[@]}" $(DOCKER_BUILD_FLAGS) --target egress -t $(BIOTOOL_EGRESS_IMAGE) .; \
	t1=$$(date +%s.%N); \
	docker build "$${args[@]}" $(DOCKER_BUILD_FLAGS) --target sandbox -t $(BIOTOOL_IMAGE) .; \
	t2=$$(date +%s.%N); \
	$(PYTHON) -c 'import json,sys; a=sys.argv; json.dump({"sandbox": a[1], "egress": a[2], "base": a[3], "torch_variant": a[4], "revision": a[5], "egress_build_s": round(float(a[7])-float(a[6]), 1), "sandbox_build_s": round(float(a[8])-float(a[7]), 1), "finished": a[9]}, open(a[10], "w"), indent=1)' \
	    $(BIOTOOL_IMAGE) $(BIOTOOL_EGRESS_IMAGE) $$base $(TORCH_VARIANT) $(REVISION) $$t0 $$t1 $$t2 \
	    "$$(date -u +%FT%TZ)" $(OUT)/last-build.json; \
	(cat $(OUT)/last-build.json | tr -d '\n'; echo) >> $(OUT)/builds.jsonl; \
	for img in $(BIOTOOL_IMAGE) $(BIOTOOL_EGRESS_IMAGE); do image/describe.sh "$$img" $(OUT)/images; done; \
	echo "image: built $(BIOTOOL_IMAGE) and $(BIOTOOL_EGRESS_IMAGE) ($(OUT)/last-build.json)"

image-cuda:
	$(MAKE) image TORCH_VARIANT=cuda BIOTOOL_IMAGE=$(BIOTOOL_CUDA_IMAGE)

# HEAD rebuilt from a clean clone in a temporary folder, no layer cache, under other tags and
# the same build arguments (the wheelhouse, the lock's inputs, is linked in), then every file
# of both images compared with the ones built here (biotool-sandbox verify-image --against).
REPRO_TAG ?= repro-check
repro-check:
	image/repro-check.sh "$(BIOTOOL_IMAGE)" "$(BIOTOOL_EGRESS_IMAGE)" "$(REPRO_TAG)" "$(IMAGE_NAME)"

# A `docker save` archive: what to copy to an HPC site that has Apptainer but no docker.
docker-archive:
	mkdir -p $(OUT)
	docker save $(BIOTOOL_IMAGE) -o $(OUT)/biotool-sandbox.tar
	@echo "wrote $(OUT)/biotool-sandbox.tar"

# The SIF. With Apptainer on this host: from the docker daemon, or from an archive with
# SIF_SOURCE=docker-archive. Without it: real Apptainer as a non-root user in the HPC node image
# (image/hpc/build-sif.sh), once per image id, with out/biotool-sandbox.sif.json recording it.
SIF_SOURCE ?= docker-daemon
SIF_BUILDER ?= $(if $(shell command -v apptainer),host,node)
sif:
ifeq ($(SIF_BUILDER),node)
	image/hpc/build-sif.sh $(BIOTOOL_IMAGE) $(OUT)/biotool-sandbox.sif
else
	mkdir -p $(OUT)
	if [ "$(SIF_SOURCE)" = docker-archive ]; then \
	    $(MAKE) docker-archive; from=$(OUT)/biotool-sandbox.tar; else from=$(BIOTOOL_IMAGE); fi; \
	apptainer build --force --build-arg BOOTSTRAP=$(SIF_SOURCE) --build-arg FROM=$$from \
	    --mksquashfs-args "-comp zstd -Xcompression-level 3" $(OUT)/biotool-sandbox.sif image/apptainer.def
endif

# The egress image's SIF, an Apptainer episode's own gate when it reaches the site's relay
# (hpc/episode-gate.sh); built as the sandbox's is, its record in out/biotool-egress.sif.json.
egress-sif:
ifeq ($(SIF_BUILDER),node)
	image/hpc/build-sif.sh $(BIOTOOL_EGRESS_IMAGE) $(OUT)/biotool-egress.sif image/hpc/egress.def
else
	mkdir -p $(OUT)
	apptainer build --force --build-arg FROM=$(BIOTOOL_EGRESS_IMAGE) \
	    --mksquashfs-args "-comp zstd -Xcompression-level 3" $(OUT)/biotool-egress.sif image/hpc/egress.def
endif

# The HPC node image: Debian sid's Apptainer (pinned in image/hpc/APPTAINER_VERSION), Slurm, munge.
hpc-node:
	image/hpc/build-node.sh

# ---------------------------------------------------------------- tests, demo, bench

test: test-unit test-image

# One worker per core (pytest-xdist); every session fixture is built once per worker, in that
# worker's own temporary folder (tests/unit/conftest.py); loadgroup keeps the bad-input corpus,
# which runs once per session, on one worker.
test-unit:
	$(PYTHON) -m pytest -q --durations=25 -n auto --dist loadgroup tests/unit

test-image: image
	$(PYTHON) -m pytest -q --durations=25 -m 'not cuda and not podman' tests/image

# Harbor's tier (docs/harbor.md, docs/tests.md): its own trials on this engine, minutes, so not
# in make test; .ci/run runs it after make test.
harbor-runner:
	image/harbor/build-runner.sh

test-harbor: image harbor-runner
	$(PYTHON) -m pytest -q --durations=15 tests/harbor

# HPC for real (docs/hpc.md): the SIF under real Apptainer and Slurm in the node image, as the
# node's non-root user; minutes, its own target, run by .ci/run after make test.
test-apptainer: image hpc-node sif egress-sif
	$(PYTHON) -m pytest -q --durations=15 tests/apptainer

# The image tier's proof again with every sandbox container on gVisor (the launcher's and the
# test runner's alike, through BIOTOOL_RUNTIME); egress stays on the default runtime.
GVISOR_TESTS ?= tests/image/test_egress.py \
    tests/image/test_isolation.py tests/image/test_container.py \
    tests/image/test_toolbox_in_image.py tests/image/test_tools_in_image.py \
    tests/image/test_reads_in_image.py
test-gvisor: image
	@docker info --format '{{json .Runtimes}}' | grep -q '"runsc"' || { \
	    echo "make test-gvisor: the engine has no runtime runsc: run image/runtime/register-runsc.sh" >&2; exit 2; }
	BIOTOOL_RUNTIME=runsc $(PYTHON) -m pytest -q --durations=15 -m 'not cuda' $(GVISOR_TESTS)

# The offline forms under rootless Podman as a non-root user (not part of make test: the image
# is loaded into that user's own store first, minutes for its 4 GB).
test-podman: image
	image/runtime/podman-user.sh
	$(PYTHON) -m pytest -q -m podman tests/image/test_podman.py

# The CUDA image on this machine's CPU (a GPU, when visible, is checked against its driver).
test-cuda: image-cuda
	BIOTOOL_CUDA_IMAGE=$(BIOTOOL_CUDA_IMAGE) $(PYTHON) -m pytest -q -m cuda tests/image

demo: image
	biotool-sandbox demo

bench: image
	$(PYTHON) bench/image_bench.py

clean:
	rm -rf $(WHEELHOUSE) $(OUT) .base build
