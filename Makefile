# Set-up and entry points.  Both `make run` and `make test` build the virtual
# environment at .venv from this repository's own files on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

BENCHES := recall latency rerank day-zero vector-index vector-search index parse embed gpu hooks hub history pipeline

.PHONY: venv run test bench $(addprefix bench-,$(BENCHES)) clean

$(BIN)/funes: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	# torch first, from the pinned CPU wheel: a bare "torch" would pull a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test,ui,distributed]'
	touch $@

venv: $(BIN)/funes

# The main job on the embedded default: index this machine's agent transcripts
# into the local Lance memory (or bundled examples into a demo memory when there
# are none), then recall from it.
run: venv
	$(BIN)/funes quickstart

# The default suite (`pytest`: everything not marked slow), then the slow end-to-end
# tests (agents' own CLIs, a pty first index, multi-process and Celery pipeline runs).
test: venv
	$(BIN)/python -m pytest
	$(BIN)/python -m pytest -m slow

# The benchmarks a maintainer reruns before a release, each rewriting its section of
# BENCHMARKS.md: `make bench` the default set (about an hour on 2 cores), `make
# bench-<name>` one of them (`$(BIN)/python benchmarks/run_all.py --list`: each one's
# commands and section).
bench: venv
	$(BIN)/python benchmarks/run_all.py

$(addprefix bench-,$(BENCHES)): bench-%: venv
	$(BIN)/python benchmarks/run_all.py $*

clean:
	rm -rf $(VENV) build *.egg-info
