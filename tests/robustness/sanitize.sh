#!/usr/bin/env bash
# Builds devmgr with clang and a sanitizer in its own build directory and runs tests under it.
#   sanitize.sh asan DIR JOBS   ASan+UBSan: every target (each source compiled once, with clang's
#                               thread-safety analysis as errors, so this build is also the CI's
#                               thread-safety check), then every unit and integration test
#   sanitize.sh tsan DIR JOBS   TSan: the concurrency-heavy tests (the targets listed below)
#   sanitize.sh asan DIR JOBS configure-only   (tests/fuzz/run.sh: the fuzzers share the ASan build)
# Any sanitizer report fails the test that produced it (halt_on_error / exitcode), so a
# non-zero exit means a finding. Suppressions: tests/robustness/*.supp (each entry explained).
set -euo pipefail
mode=$1 dir=$2 jobs=${3:-2}
src=$(cd "$(dirname "$0")/../.." && pwd)
here=$src/tests/robustness

case $mode in
  asan)
    sanitize=address,undefined
    skip=
    # Not here: the DRA catalogue over the Go DRA drivers (peers.*.dra-conformance, about 50 s
    # each). devmgr's side of it is the same code the DraVerdictsTest cases run under this
    # build with the reference driver in process; `make test` runs the Go drivers' verdicts.
    skip_more='|^peers\..*\.dra-conformance$'
    extra=-DDEVMGR_FUZZ=ON  # the same build directory serves `make fuzz`
    # Every target: unit tests of every library, the integration tests over real sockets, the
    # fuzz replays, and the C++ side of the DRA driver peer test.
    targets=(all)
    extra="$extra -DDEVMGR_THREAD_SAFETY=ON"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0:strict_string_checks=1"
    export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$here/ubsan.supp"
    ;;
  tsan)
    sanitize=thread
    skip='|fuzz' # the fuzz replays are single-threaded: ASan's job
    # Also not here: the DRA driver's API test (its C++ side is not in the list below) and the
    # crash-consistency run (SIGKILLs at random points of `serve`'s checkpoint writes: under
    # TSan's slowdown no cycle reached a write; ASan and `make test` run it).
    # And not the DRA catalogue over the Go DRA drivers, as for ASan above.
    skip_more='|^peers\..*\.api$|^peers\..*\.dra-conformance$|^robustness\.crash_consistency$'
    extra=
    # Where threads meet: the manager's locks, gRPC streams and the registration server, the
    # plugin's serving threads, plugin processes (a fork beside running threads), the plugin
    # manager's watcher and reconciler, the DRA manager, its plugin handler and wipe timers,
    # the sample DRA driver's servers, the embedded API endpoint's HTTP server and watches, and
    # the whole node over real sockets.
    targets=(devmgr devmgr_manager_test devmgr_transport_test devmgr_plugin_test devmgr_node_test
             devmgr_podresources_test devmgr_integration_test devmgr_process_test
             devmgr_pluginmanager_test devmgr_dra_test devmgr_draplugin_test
             devmgr_apiserver_test)
    # Debian's gRPC and Abseil are not instrumented: tsan.supp says how that is handled.
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0:suppressions=$here/tsan.supp"
    ;;
  *) echo "usage: $0 asan|tsan BUILD_DIR [JOBS]" >&2; exit 2 ;;
esac

gen=(); [ -f "$dir/CMakeCache.txt" ] || gen=(-G Ninja -DCMAKE_CXX_COMPILER=clang++)
cmake -S "$src" -B "$dir" "${gen[@]}" -DDEVMGR_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DDEVMGR_SANITIZE=$sanitize $extra >/dev/null
[ "${4:-}" = configure-only ] && exit 0  # used by tests/fuzz/run.sh
# Only the binaries this job runs (a library without tests has no target: skip it).
have=$(ninja -C "$dir" -t targets all | sed -n 's/^\([a-z_]*\): CXX_EXECUTABLE_LINKER.*/\1/p')
build=()
for t in "${targets[@]}"; do [ "$t" = all ] || grep -qx "$t" <<<"$have" && build+=("$t"); done
cmake --build "$dir" -j "$jobs" --target "${build[@]}"

# Binaries not built here only have a *_NOT_BUILT placeholder test; the CLI scripts (e2e), the
# Python clients, the kubelet oracle (Go) and the deploy manifests are not run under sanitizers.
cd "$dir"
set +e
# No test is run a second time: a failure under the sanitizers' slowdown is a
# failure. Any sanitizer report in the log fails the job too.
ctest --output-on-failure -j "$jobs" --timeout 900 \
  -E "_NOT_BUILT|^(e2e|python|kubelet_oracle|deploy$skip)\\.$skip_more" >"ctest-$mode.log" 2>&1
rc=$?
set -e
grep -vE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "ctest-$mode.log"
if grep -qE 'WARNING: ThreadSanitizer|ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
  "ctest-$mode.log"; then
  echo "sanitize.sh: sanitizer report(s) in $dir/ctest-$mode.log" >&2
  rc=1
fi
exit $rc
