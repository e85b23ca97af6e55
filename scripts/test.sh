#!/usr/bin/env bash
# test.sh - install what is missing, build, and run the whole test suite.
#   scripts/test.sh              the suite (build/)
#   scripts/test.sh --sanitize   the suite under AddressSanitizer and
#                                UndefinedBehaviorSanitizer, with the lock
#                                order checked (UMC_LOCKDEP; build-asan/)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/deps.sh test

build=build
flags=
if [ "${1:-}" = --sanitize ]; then
	build=build-asan
	flags="-DUMC_SANITIZE=address,undefined -DUMC_LOCKDEP=ON -DCMAKE_BUILD_TYPE=Debug"
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
# ON, not AUTO: a test whose package is missing fails the configure step
# instead of quietly not being built.
cmake -S . -B "$build" -DUMC_TESTS=ON $flags >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j2
