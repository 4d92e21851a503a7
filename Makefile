# lmcourse: two commands do everything on a fresh machine.
#   make lab    set up .venv (pinned), register the kernel, open JupyterLab on chapter 1
#   make test   same setup, then unit tests + every notebook through nbval
# GPU: make lab TORCH_INDEX=https://download.pytorch.org/whl/cu126   (see README)

PYTHON        ?= python3
VENV          ?= .venv
TORCH_VERSION ?= 2.13.0
TORCH_INDEX   ?=
JOBS          ?= 2
NOTEBOOK_BUDGET_S ?= 120

BIN   := $(VENV)/bin
STAMP := $(VENV)/.lmcourse-setup
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# Offline and quiet: nothing is fetched from a model hub at import or test time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup lab test unit notebooks lint student lock clean

$(STAMP): pyproject.toml requirements-lock.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== installing torch $(TORCH_VERSION) $(if $(TORCH_INDEX),from $(TORCH_INDEX),(CPU build on this machine))"
	$(BIN)/python -m pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)
	@echo "== installing the course and its pinned dependencies"
	$(BIN)/python -m pip install -q -c requirements-lock.txt -e ".[dev]"
	$(BIN)/python -m ipykernel install --user --name lmcourse --display-name "Python 3 (lmcourse)" >/dev/null
	@touch $(STAMP)

setup: $(STAMP)

lab: setup
	$(BIN)/jupyter lab $(ROOT_FLAG) chapters/01_backprop.ipynb

lint: setup
	$(BIN)/ruff check .

# Unit tests and notebooks in one pytest run: xdist spreads whole files over $(JOBS)
# workers (--dist loadscope keeps a notebook's cells on one kernel).
test: setup lint
	LMCOURSE_NOTEBOOK_BUDGET_S=$(NOTEBOOK_BUDGET_S) TQDM_DISABLE=1 \
	$(BIN)/python -m pytest -n $(JOBS) --dist loadscope \
	  --nbval-lax --nbval-current-env --nbval-cell-timeout=300 \
	  tests chapters labs

unit: setup
	$(BIN)/python -m pytest -n $(JOBS) --dist loadscope tests

notebooks: setup
	TQDM_DISABLE=1 $(BIN)/python -m pytest -n $(JOBS) --dist loadscope \
	  --nbval-lax --nbval-current-env --nbval-cell-timeout=300 chapters labs

student: setup
	$(BIN)/python tools/nbtools.py student

lock: setup
	{ sed -n '1,3p' requirements-lock.txt; $(BIN)/python -m pip freeze --exclude-editable \
	  | grep -v -i -e '^torch==' -e '^lmcourse'; } > requirements-lock.txt.new
	mv requirements-lock.txt.new requirements-lock.txt

clean:
	rm -rf _build
