# autotune — the two commands:  make tune  (tune the example task)  ·  make test  (run the tests)
# Everything else is a step of those: make deps, make build.
SHELL := /bin/bash
AUTOTUNE_CACHE ?= $(HOME)/.cache/autotune
export AUTOTUNE_CACHE
BUILD_DIR ?= build
PRESET ?= dev
JOBS ?= $(shell nproc)
# With no GPU on the build machine, CUDA architectures must be named (9.0 = H100/H200).
export TORCH_CUDA_ARCH_LIST ?= 9.0
# make tune's default: a real task on data `make deps` fetches (handwritten digits, a small CNN, SGD; examples/digits),
# the user's batch of 32 against 64 and 128 (priced by time to train) and one loader worker against none.
TUNE_ARGS ?= --task examples/digits/task.py --knobs batch_size=32,64,128 num_workers=0,1 --budget 170s

.PHONY: deps build test check-fast tune clean device-deps device-check fuzz

deps:
	@scripts/setup-deps.sh

build: deps
	@scripts/build.sh $(BUILD_DIR) $(PRESET)

# Tests run side by side as far as the cores allow: each declares what it needs (tests/CMakeLists.txt, the end), and
# ctest starts up to three times as many as there are cores, the waiting ones filling the gaps.
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure --no-tests=error -j $$(( 3 * $(JOBS) )) --resource-spec-file test-resources.json --timeout 900

# The edit loop: the unit tests and the quick integration tests on the fake worker (CTest label `fast`), under two
# minutes warm; `make test` runs them too, with everything else (docs/testing.md).
check-fast: build
	cd $(BUILD_DIR) && ctest --output-on-failure --no-tests=error -L fast -j $$(( 3 * $(JOBS) )) --resource-spec-file test-resources.json --timeout 300

# The tuner's exit 1 (it ran, and found no winner) is an answer, not a failed build: make would turn it into its own
# exit 2, so it is said in words and make succeeds; a usage error or a crash still fails. `autotune tune` keeps its codes.
tune: build
	@$(BUILD_DIR)/bin/autotune tune $(TUNE_ARGS); rc=$$?; \
	if [ $$rc -eq 1 ]; then echo "make tune: no winner on this machine (autotune tune exited 1): the report above says why"; \
	else exit $$rc; fi

# The GPU proof kit (docs/gpu-kit.md): device-deps here, device-check on the GPU machine (or --cpu anywhere).
device-deps:
	@scripts/device-deps.sh

device-check:
	@scripts/device-check.sh --deps .device-deps $(DEVICE_CHECK_ARGS)

# libFuzzer targets under ASan + UBSan (clang), FUZZ_SECONDS each (tests/fuzz/README.md).
fuzz: deps
	@scripts/fuzz.sh

clean:
	rm -rf $(BUILD_DIR) $(BUILD_DIR)-pip-test
