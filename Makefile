# teller - top-level entry points. The build itself is CMake + Ninja in build/.
#   make          build the library, the CLI and the tests
#   make test     build, then run the tests (plain, the install test, the
#                 Python package's, then under ASan+UBSan)
#   make install  install under PREFIX (default /usr/local), staged in DESTDIR
#   make uninstall  remove what make install put there (same PREFIX, DESTDIR)
#   make bench    ingest speed and memory against Python's json (bench/run.sh)
#   make fuzz     libFuzzer targets with clang, FUZZ_SECONDS each (fuzz/run.sh)
#   make demo     simulate a faulty 2-node run, diagnose it, write the report
#   make vocab    learn the default TPE vocabulary (src/tpe/default.vocab)
#   make model    train the default root-cause model (src/model/default.tmod)
# Every target installs missing Debian packages first (scripts/install-deps).

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_SECONDS ?= 60
PREFIX     ?= /usr/local
DESTDIR    ?=
# Debian's python3, whatever python3 comes first in PATH
PYTHON     ?= /usr/bin/python3

.PHONY: all deps test test-plain test-install test-python test-asan install uninstall bench fuzz demo vocab \
	model clean

all: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
	ninja -C $(BUILD)

deps:
	@scripts/install-deps

test: test-plain test-install test-python test-asan

test-plain: all
	timeout 1200 $(BUILD)/teller_tests

# installs into a temporary prefix, builds a program against it with
# pkg-config, runs it, uninstalls (tests/install.sh)
test-install: all
	timeout 300 tests/install.sh $(BUILD)

# the Python package (python/) over the build's libteller.so, and the example
test-python: all
	TELLER_LIBRARY=$(abspath $(BUILD))/libteller.so TELLER_CLI=$(abspath $(BUILD))/teller PYTHONDONTWRITEBYTECODE=1 \
		timeout 600 $(PYTHON) -m pytest -q -p no:cacheprovider python/tests

install: all
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

uninstall:
	cmake -DROOT="$(DESTDIR)$(PREFIX)" -P cmake/uninstall.cmake

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTELLER_SANITIZE=ON
	ninja -C $(ASAN_BUILD)
	ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout 1500 $(ASAN_BUILD)/teller_tests

bench: all
	@TELLER_WANT_BENCH=1 scripts/install-deps
	bench/run.sh $(BUILD)

fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

# The demo: a simulated 2-node, 8-GPU vLLM run (tensor parallel inside a
# node, pipeline across nodes) with injected faults, diagnosed end to end.
DEMO_DIR ?= $(BUILD)/demo
demo: all
	rm -rf $(DEMO_DIR)
	$(BUILD)/teller simulate -o $(DEMO_DIR)/case --nodes 2 --gpus-per-node 4 --steps 80 --fault all --fault-rate 0.15 --seed 7
	$(BUILD)/teller diagnose --json $(DEMO_DIR)/predictions.json --html $(DEMO_DIR)/report.html \
		--perfetto $(DEMO_DIR)/trace.perfetto.json.gz $(DEMO_DIR)/case
	$(BUILD)/teller eval --truth $(DEMO_DIR)/case --pred $(DEMO_DIR)/predictions.json
	@echo
	@echo "report: $(abspath $(DEMO_DIR))/report.html"
	@echo "perfetto trace (open in ui.perfetto.dev): $(abspath $(DEMO_DIR))/trace.perfetto.json.gz"

# The default TPE vocabulary, embedded in the library: learned from the
# shared real traces and a seeded simulator corpus; rebuilt after.
vocab: all
	scripts/tpe-vocab.sh $(BUILD)
	ninja -C $(BUILD)

# The default root-cause model, embedded in the library: trained on a
# seeded simulator corpus (scripts/train-model.sh); rebuilt after.
model: all
	scripts/train-model.sh $(BUILD)
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
	ninja -C $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
