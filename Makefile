# teller - top-level entry points. The build itself is CMake + Ninja in build/.
#   make          build the library, the CLI and the tests
#   make test     build, then run the tests (plain, then under ASan+UBSan)
#   make bench    ingest speed and memory against Python's json (bench/run.sh)
#   make fuzz     libFuzzer targets with clang, FUZZ_SECONDS each (fuzz/run.sh)
#   make demo     build, then read a real vLLM trace (the simulated demo comes later)
# Every target installs missing Debian packages first (scripts/install-deps).

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_SECONDS ?= 60

.PHONY: all deps test test-plain test-asan bench fuzz demo clean

all: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
	ninja -C $(BUILD)

deps:
	@scripts/install-deps

test: test-plain test-asan

test-plain: all
	$(BUILD)/teller_tests

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTELLER_SANITIZE=ON
	ninja -C $(ASAN_BUILD)
	ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(ASAN_BUILD)/teller_tests

bench: all
	bench/run.sh $(BUILD)

fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

# Until the simulator and diagnosis land, the demo reads a real vLLM trace.
DEMO_TRACE ?= ../shared/data/traces/tracelens/b200/eager_trace.json.gz
demo: all
	$(BUILD)/teller stats $(DEMO_TRACE)
	$(BUILD)/teller steps $(DEMO_TRACE)
	$(BUILD)/teller tree --max-depth 3 $(DEMO_TRACE) | head -40

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
