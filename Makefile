# pbs-harness — the two commands of the README:
#   make acceptance   bring up the local cluster, deploy OpenPBS, run the acceptance suites, write the report
#   make test         the project's own tests: lint + unit tests + collection of the acceptance suites (never
#                     their run: a cluster left up by `make acceptance` is not tested again, serially, here)

# The Python the venv is made with: 3.11 or newer (ansible-core 2.19), e.g. PYTHON=python3.12.
PYTHON    ?= python3
VENV      ?= .venv
PY        := $(VENV)/bin/python
HARNESS   := $(VENV)/bin/pbs-harness
PYTEST_ARGS ?=
# pytest-xdist workers of the unit tests in `make test`: auto = one per core.
UNIT_WORKERS ?= auto
# Local clusters of `make acceptance`, one pytest-xdist worker each: auto = chosen from this machine
# (2 per core, within memory; docs/parallel.md). CLUSTERS=1 runs the suites serially on one cluster.
CLUSTERS  ?= auto
# Extra arguments of `pbs-harness up` in `make acceptance`, e.g. UP_ARGS="--name-prefix ci --subnet auto"
# (with PBS_HARNESS_STATE_DIR set) for clusters of their own beside another checkout's.
UP_ARGS   ?=
# Kind of local host (docs/local-cluster.md#host-flavours; the README says why system is the default):
#   system     each host its own Debian root with systemd, OpenPBS installed per host from packages; this
#              machine's /etc, /opt and /home are never touched
#   namespace  hosts share this machine's /opt/pbs (OpenPBS installed here first), /etc and /home
# OPENPBS: for system hosts, a release zip, a folder of .deb/.rpm files, or an OpenPBS source archive or tree
# (built into packages once, cached). Unset: OPENPBS_SOURCE, or the archive CI builds
# (shared/openpbs/openpbs-master-cd7ab5e.tar.gz in a folder above the checkout: scripts/ci/install-openpbs.sh
# --source); else ./acceptance says what to give. IMAGE: the system hosts' distribution (debian-12, debian-11).
# ./acceptance judges these values before it installs or builds anything.
FLAVOUR   ?= system
OPENPBS   ?=
IMAGE     ?= debian-12

# Every recipe line runs in bash with -e and pipefail: a failing command anywhere in a line (a pipe's first
# stage, the first of `{ a; b; }`) fails the recipe, so make never turns a failure into success. No recipe
# may swallow a code (`|| true`, a `-` prefix, $(shell ...)): tests/unit/test_makefile_exit_codes.py.
SHELL     := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

.PHONY: venv test unit lint acceptance down bench bench-fresh bench-suites bench-parallel bench-flavours bench-ptl bench-mutants clean

# The versions of constraints.txt, dependencies of dependencies too (a lock; `make lock` rewrites it).
# On a bare Debian/Ubuntu (as root) the Python and its venv module are installed first when missing.
$(VENV)/.installed: requirements.txt requirements-dev.txt constraints.txt pyproject.toml
	scripts/ci/check-python.sh --install $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	$(VENV)/bin/pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

venv: $(VENV)/.installed

# constraints.txt from a fresh environment of requirements-dev.txt (after changing a requirements file).
.PHONY: lock
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
	{ sed -n '/^#/p' constraints.txt; .venv-lock/bin/pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .venv-lock

lint: venv lint-ci-examples
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/ansible-lint --offline -q

# The CI recipes in examples/ci/ against GitHub's and GitLab's published schemas, as bundled with
# check-jsonschema: offline, nothing is downloaded.
.PHONY: lint-ci-examples
lint-ci-examples: venv
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows examples/ci/github-actions.yml
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.gitlab-ci --data-transform gitlab-ci examples/ci/gitlab-ci.yml

# The unit tests on every core (pytest-xdist; UNIT_WORKERS=0 runs them in one process): serially they took
# 1115 s of CI's hour in the make test stage and as long again in its bare-Debian check (CI run of 2026-11-28).
# --dist worksteal: a worker that runs out takes half of another's queue. xdist's default (load) keeps tests
# queued behind the cloud tests' minutes-long ones while the other worker idles: replayed from the 29 Nov
# profile's times, load ends at 3291 s (the run took 3312 s), worksteal at 2537 s (docs/performance.md).
unit: venv
	$(PY) -m pytest tests -q -n $(UNIT_WORKERS) --dist worksteal --junitxml reports/junit-unit.xml

# The acceptance suites are collected here, not run: every suite imports and its markers and spec tags are
# known, whether or not a cluster is up. They run in `make acceptance` (or `pbs-harness test`).
test: lint unit
	$(PY) -m pytest ptl_tests -qq --collect-only -p no:cacheprovider

# The README's main command is ./acceptance, which exits with pbs-harness's own code (the README's table);
# make turns any failure into its own 2, and the line before it names the harness's code. ./acceptance
# judges FLAVOUR, IMAGE, CLUSTERS and OPENPBS first, then installs what the hosts need on this machine
# (scripts/ci/install-system-packages.sh), makes the venv, and runs `pbs-harness up` and `pbs-harness test`
# (a line per finished test: suite, name, outcome, duration). Every setting reaches it in its environment,
# not in the command line: its text arrives unchanged, quotes and spaces included (in '...' on the line, a
# value's own single quote ended the quoting and bash refused the line; issue #34). ./acceptance judges each
# and splits UP_ARGS and PYTEST_ARGS as a shell would.
acceptance: export FLAVOUR := $(FLAVOUR)
acceptance: export IMAGE := $(IMAGE)
acceptance: export CLUSTERS := $(CLUSTERS)
acceptance: export OPENPBS := $(OPENPBS)
acceptance: export PYTHON := $(PYTHON)
acceptance: export UP_ARGS := $(UP_ARGS)
acceptance: export PYTEST_ARGS := $(PYTEST_ARGS)
acceptance:
	./acceptance

down: venv
	$(HARNESS) down

bench: venv
	$(PY) bench/bench_deploy.py

# Issue #33: each stage of a first run (new clone, empty cache) and of a warm rerun (second clone, cache
# filled, no cluster up) of ./acceptance, in one run: reports/bench-fresh.json with the targets judged.
# OPENPBS as for acceptance; BENCH_FRESH_ARGS e.g. "--phases warm --scope up --state-dir DIR
# --name-prefix bf --subnet 10.86.0.0/24" (bench/bench_fresh.py --help).
BENCH_FRESH_ARGS ?=
bench-fresh: venv
	$(PY) bench/bench_fresh.py --clusters $(if $(filter-out auto,$(CLUSTERS)),$(CLUSTERS),4) \
		$(if $(OPENPBS),--openpbs $(OPENPBS)) $(BENCH_FRESH_ARGS)

# Wall time of each acceptance suite, twice in a row, on the deployed cluster (SUITES= to choose).
bench-suites: venv
	$(PY) bench/bench_suites.py $(SUITES)

# Serial vs parallel wall time of the acceptance suites in one run, per-suite times, memory and CPU
# per cluster, each suite's slowest tests and what they wait on (reports/bench-parallel.json).
bench-parallel: venv
	$(PY) bench/bench_parallel.py --clusters $(CLUSTERS)

# Namespace vs system hosts in one run: up + deploy, memory per host, acceptance wall time
# (reports/bench-flavours.{json,md}). OPENPBS names the system hosts' OpenPBS.
bench-flavours: venv
	$(PY) bench/bench_flavours.py --openpbs $(OPENPBS) $(if $(filter-out auto,$(CLUSTERS)),--clusters $(CLUSTERS))

# OpenPBS's own PTL files for the four features, unmodified, on a harness cluster, then our suites on
# the same cluster: reports/bench-ptl.json and .md with the wall-time ratio (docs/ptl.md).
# OPENPBS_SOURCE: the source the cluster's OpenPBS was built from (.tar.gz or tree). PTL_ARGS: e.g.
# "--state-dir /var/lib/pbs-harness/pt --name-prefix pt --subnet 10.83.0.0/24", "--features admin_suspend",
# "--limit 2" (a sample: the first 2 tests of each PTL group), "--clusters 4" (PTL's tests shared out among
# 4 local clusters, namespace or system hosts; our suites on the same 4).
OPENPBS_SOURCE ?=
PTL_ARGS  ?=
bench-ptl: venv
	$(PY) bench/bench_ptl.py $(if $(OPENPBS_SOURCE),--source $(OPENPBS_SOURCE)) $(PTL_ARGS)

# The suites' own mutation check (docs/mutants.md): each mutant of bench/mutants.yaml (or a patch of your own,
# MUTANT=file.diff SUITE=marker) built into the local system cluster, its suite run, the pristine build restored:
# reports/bench-mutants.json. OPENPBS_SOURCE: the source the cluster was built from (default: the archive CI
# builds). MUTANTS_ARGS: e.g. "--state-dir /var/lib/pbs-harness/mu --only phase-walltime-cumulative".
MUTANT    ?=
SUITE     ?=
MUTANTS_ARGS ?=
# The default source is found in the recipe, not with $(shell ...), whose exit code make drops: with no
# source, install-openpbs.sh's message and code end the recipe.
bench-mutants: venv
	src='$(OPENPBS_SOURCE)'; [ -n "$$src" ] || src=$$(scripts/ci/install-openpbs.sh --source); \
	$(PY) bench/bench_mutants.py --source "$$src" \
		$(if $(MUTANT),--patch $(MUTANT) $(if $(SUITE),--suite $(SUITE))) $(MUTANTS_ARGS)

clean:
	rm -rf $(VENV) reports .pytest_cache .ruff_cache
