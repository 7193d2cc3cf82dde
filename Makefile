# Two commands do all the set-up: `make crawl URL=...` (or SEEDS=file) and `make test`.
# Both create .venv on first use (pip is upgraded inside it first: the system pip 23
# fails to resolve some packages' extras). The package's bytecode is compiled once
# there: an editable install leaves that to the first import, and where bytecode is not
# written (PYTHONDONTWRITEBYTECODE, a read-only tree) every start compiled all of
# crawler/ again (0.12 s; docs/performance.md, "Real site").

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
ifndef OUT
OUT    := crawls/$(shell date -u +%Y%m%dT%H%M%SZ)
endif
ARGS   ?=
# URL, SEEDS (a seed file, one URL a line: --seeds), or both (URL first)
SEED_ARGS = $(if $(URL),"$(URL)") $(if $(SEEDS),--seeds "$(SEEDS)")

.PHONY: crawl map test lint bench venv clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m compileall -q crawler
	touch $(STAMP)

venv: $(STAMP)

crawl: $(STAMP)
	@test -n "$(URL)$(SEEDS)" || { echo "usage: make crawl URL=http://host/ | SEEDS=file [OUT=dir] [ARGS='--workers 4']" >&2; exit 2; }
	@echo "crawl output: $(OUT) $(if $(findstring --redis,$(ARGS)),(with --redis every run has a new OUT: after a stop, run it again without OUT=),(after a stop, resume with the same command and OUT=$(OUT)))"
	$(PY) -m crawler $(SEED_ARGS) --out "$(OUT)" $(ARGS)

# The same walk without conversion: page counts, sections, depths, sizes (OUT/map.json).
# Give the same OUT to the crawl that follows, so its progress bar gets the total.
map: $(STAMP)
	@test -n "$(URL)$(SEEDS)" || { echo "usage: make map URL=http://host/ | SEEDS=file [OUT=dir] [ARGS='--workers 4']" >&2; exit 2; }
	@echo "map output: $(OUT)"
	$(PY) -m crawler map $(SEED_ARGS) --out "$(OUT)" $(ARGS)

test: $(STAMP)
	$(PY) -m pytest

# ruff (config in pyproject.toml) over the code, tests and benchmarks; mypy (setup.cfg) on the package.
lint: $(STAMP)
	$(PY) -m ruff check crawler tests bench
	$(PY) -m ruff format --check crawler tests bench
	$(PY) -m mypy crawler

# Benchmarks (nginx from Debian: apt-get install nginx-light). BENCH_QUICK=1: each part once.
# Figures go to stdout and bench/results/*.json (memory also as a PNG).
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	@started=$$(date +%s); \
	$(PY) bench/page_work.py && \
	$(PY) bench/visited_table.py && \
	$(PY) bench/slow_server.py && \
	$(PY) bench/realsite.py && \
	$(PY) bench/throttle.py && \
	$(PY) bench/profile_crawl.py && \
	$(PY) bench/memory.py && \
	$(PY) bench/content.py && \
	$(PY) bench/recrawl.py && \
	echo "make bench: $$(( $$(date +%s) - started )) s"

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .hypothesis
