# devmgr: two commands on a fresh Debian 12 machine.
#   make demo   - install what is missing, build, and run the demo
#   make test   - install what is missing, build, and run the whole test suite
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# Debian packages the build and the tests need (see scripts/deps.sh).
.PHONY: all deps configure build test demo bench clean package test-package image test-image
.PHONY: kubelet-oracle

all: build

deps:
	@bash scripts/deps.sh

# Ninja when the build directory is new (an existing one keeps its generator).
# ccache's base directory makes objects reusable across clones and worktrees.
export CCACHE_BASEDIR ?= $(abspath $(CURDIR)/..)
export CCACHE_NOHASHDIR ?= 1
# Room for the gcc, ASan and TSan objects of a few clones (ccache's default is 5 GB).
export CCACHE_MAXSIZE ?= 20G
configure: deps
	@if [ -f $(BUILD_DIR)/CMakeCache.txt ]; then \
	  cmake -S . -B $(BUILD_DIR) >/dev/null; \
	else \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null; \
	fi

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 300

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)

bench: build
	@bash scripts/bench.sh $(BUILD_DIR)

# The real kubelet's device manager per profile (tests/kubelet-oracle,
# docs/oracle.md); needs Go and the Go module proxy (or a warm module cache).
ORACLE_PROFILES ?= 1.33 1.34 1.35 1.36 1.37
kubelet-oracle:
	@OUT=$(abspath $(BUILD_DIR))/kubelet-oracle bash tests/kubelet-oracle/build.sh $(ORACLE_PROFILES)

clean:
	rm -rf $(BUILD_DIR)

# ---- formatting (.clang-format; clang-format 14 from Debian) -----------------
# make format rewrites every tracked C++ file; make check-format lists the files that
# differ and fails (CI runs it).
.PHONY: format check-format
FORMAT_FILES = git ls-files '*.cc' '*.h'
format:
	@bash scripts/deps.sh format
	@$(FORMAT_FILES) | xargs clang-format -i
check-format:
	@bash scripts/deps.sh format
	@bad=$$($(FORMAT_FILES) | xargs -n 40 clang-format --dry-run 2>&1 | \
	  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u); \
	if [ -n "$$bad" ]; then \
	  echo "check-format: these files differ from .clang-format (run 'make format'):"; \
	  echo "$$bad" | sed 's/^/  /'; exit 1; \
	fi; echo "check-format: $$($(FORMAT_FILES) | wc -l) files match .clang-format"

# ---- distribution (README "Install") ----------------------------------------
# make package: build/devmgr_<version>_amd64.deb (CPack; Depends computed by
# dpkg-shlibdeps; man pages by help2man).
package: build
	@bash scripts/deps.sh package
	@cmake -S . -B $(BUILD_DIR) >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target devmgr manpages
	@cd $(BUILD_DIR) && cpack -G DEB >/dev/null && ls -1 $(CURDIR)/$(BUILD_DIR)/devmgr_*_amd64.deb

# make test-package: install the .deb into a clean debootstrapped Debian root
# and run devmgr there (skips where debootstrap cannot run).
test-package: package
	@bash scripts/deps.sh image
	@bash tests/package/deb_install_test.sh $(BUILD_DIR); rc=$$?; [ $$rc -eq 77 ] && exit 0; exit $$rc

# make image: localhost/devmgr:<version>, built here with no registry pull.
image: package
	@bash scripts/deps.sh image
	@bash scripts/build-image.sh $(BUILD_DIR); rc=$$?; [ $$rc -eq 77 ] && exit 0; exit $$rc

# make test-image: the image runs conformance, a bind-mounted plugin and the
# checkpoint doctor under podman (skips where podman cannot run).
test-image: image
	@bash tests/package/image_test.sh $(BUILD_DIR); rc=$$?; [ $$rc -eq 77 ] && exit 0; exit $$rc

# ---- robustness: sanitizers, thread-safety analysis, fuzzing (docs/reliability.md) ----
# Each has its own build directory and uses Debian's clang 14 (installed on demand).
CLANG_CMAKE = -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DDEVMGR_BUILD_BENCH=OFF
TSA_DIR ?= build-tsa
ASAN_DIR ?= build-asan
TSAN_DIR ?= build-tsan
FUZZ_DIR ?= $(ASAN_DIR)
FUZZ_SECONDS ?= 60
.PHONY: deps-clang check-thread-safety test-sanitize test-tsan fuzz

deps-clang:
	@bash scripts/deps.sh clang

# Compile only (clang -fsyntax-only on every source; the generated protobuf headers are built
# first). See tests/robustness/thread_safety.py.
check-thread-safety: deps-clang
	@cmake -S . -B $(TSA_DIR) $$([ -f $(TSA_DIR)/CMakeCache.txt ] || echo $(CLANG_CMAKE)) \
	  -DCMAKE_BUILD_TYPE=Debug -DDEVMGR_THREAD_SAFETY=ON >/dev/null
	@cmake --build $(TSA_DIR) -j $(JOBS) --target \
	  $$(ninja -C $(TSA_DIR) -t targets all | sed -n 's/^\(gen\/.*\.pb\.h\): .*/\1/p')
	@python3 tests/robustness/thread_safety.py $(TSA_DIR) $(JOBS)

test-sanitize: deps-clang
	@bash tests/robustness/sanitize.sh asan $(ASAN_DIR) $(JOBS)

test-tsan: deps-clang
	@bash tests/robustness/sanitize.sh tsan $(TSAN_DIR) $(JOBS)

fuzz: deps-clang
	@bash tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(JOBS)

# 1,000 SIGKILLs of `devmgr serve` during checkpoint rewrites (figures printed).
CRASH_CYCLES ?= 1000
.PHONY: crash-bench
crash-bench: build
	@DEVMGR_BIN=$(abspath $(BUILD_DIR))/devmgr bash tests/robustness/crash_consistency.sh $(CRASH_CYCLES)
