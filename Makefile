# The two commands of the README: `make run` and `make test`. Everything else is for developers.
# `make sanitize` runs the suite under ASan + UBSan except tests named Slow* (whole-table
# validations that take minutes under the sanitizers and run the same code as smaller tests);
# `make test` runs everything. The sanitizer build leaves MPI out (OpenMPI's own allocations would
# read as leaks); `make test` runs the sweep under `mpirun -n 2` where OpenMPI is installed.
# It links the project's libraries as shared objects: statically, every test and bench
# executable held its own sanitized copy of them (5.7 GB in all, which once filled CI's disk);
# shared, the build takes 2.6 GB (docs/testing.md).
BUILD      ?= build
BUILD_SAN  ?= build-sanitize
BUILD_FUZZ ?= build-fuzz
JOBS       ?= $(shell nproc)
CMAKE_GEN  := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
FUZZ_RUNS  ?= 1000000   # per target; the issue notes record runs of 10^7 (make fuzz FUZZ_RUNS=10000000)
FUZZ_PROFILE_SECONDS ?= 300

.PHONY: all deps build run test sanitize fuzz bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/apps/clustersim run

test: build
	ctest --test-dir $(BUILD) -LE gpu --output-on-failure -j $(JOBS)

sanitize: deps
	cmake -S . -B $(BUILD_SAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DCLUSTERSIM_SANITIZE=ON -DCLUSTERSIM_MPI=OFF \
	  -DBUILD_SHARED_LIBS=ON
	cmake --build $(BUILD_SAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(BUILD_SAN) -LE 'gpu|bench' -E '^Slow' --output-on-failure -j $(JOBS)

fuzz:
	@scripts/install-deps.sh --fuzz
	CXX=clang++ cmake -S . -B $(BUILD_FUZZ) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCLUSTERSIM_FUZZ=ON -DCLUSTERSIM_BUILD_TESTS=OFF
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_config fuzz_profile fuzz_cluster fuzz_experiment fuzz_chakra
	scripts/run-fuzzers.sh $(BUILD_FUZZ) $(FUZZ_RUNS) $(FUZZ_PROFILE_SECONDS)

bench: build
	bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_FUZZ)
