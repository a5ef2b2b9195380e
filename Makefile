# Every target builds the local virtual environment first, so a fresh clone needs only `make`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean browser

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,hf]" -c constraints.txt
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/alemlite demo

test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/pytest -n 2 --dist loadfile -q

# Chromium for the viewer's browser tests (tests/test_viewer.py); they skip, saying why, without it.
browser:
	@if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; } || \
		echo "note: Chromium could not be installed: tests/test_viewer.py skips its browser tests"; \
	else \
		echo "note: no Chromium: tests/test_viewer.py skips its browser tests (as root: apt-get install -y chromium)"; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.dining_throughput

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
