# devmgr: two commands on a fresh Debian 12 machine.
#   make demo   - install what is missing, build, and run the demo
#   make test   - install what is missing, build, and run the whole test suite
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# Debian packages the build and the tests need (see scripts/deps.sh).
.PHONY: all deps configure build test demo bench clean package test-package image test-image

all: build

deps:
	@bash scripts/deps.sh

# Ninja when the build directory is new (an existing one keeps its generator).
# ccache's base directory makes objects reusable across clones and worktrees.
export CCACHE_BASEDIR ?= $(abspath $(CURDIR)/..)
export CCACHE_NOHASHDIR ?= 1
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

clean:
	rm -rf $(BUILD_DIR)

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
