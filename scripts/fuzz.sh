#!/usr/bin/env bash
# fuzz.sh TARGET|all SECONDS - run the libFuzzer targets of fuzz/ (clang,
# AddressSanitizer + UndefinedBehaviorSanitizer) for SECONDS each, on one
# core, and print each target's executions and crashes.
#
#   scripts/fuzz.sh all 60          every target of fuzz/CMakeLists.txt
#   scripts/fuzz.sh rx_check 600    one of them
#
# Each target starts from its committed seeds (fuzz/corpus/TARGET) and
# keeps what it finds in a working corpus under the build directory, which
# later runs resume from; the seeds are never written.  A crash, leak,
# timeout or out-of-memory input is kept as BUILD/fuzz-work/TARGET/crash-*
# (and the like): replay it with BUILD/bin/fuzz_TARGET FILE.
#
# Env: BUILD (default build-fuzz).  Exit status 1 when any target crashed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ne 2 ] || ! [ "$2" -gt 0 ] 2>/dev/null; then
	echo "usage: $0 TARGET|all SECONDS" >&2
	exit 2
fi
want=$1
secs=$2
build=${BUILD:-build-fuzz}
case $build in /*) ;; *) build=$root/$build ;; esac

all=$(sed -n 's/^umc_fuzz_target(\([a-z0-9_]*\)[ )].*/\1/p' "$root/fuzz/CMakeLists.txt")
if [ "$want" = all ]; then
	targets=$all
elif grep -qx "$want" <<<"$all"; then
	targets=$want
else
	echo "unknown target '$want'; targets: $(echo $all)" >&2
	exit 2
fi

"$root/scripts/deps.sh" fuzz || exit 1
CC=clang cmake -S "$root" -B "$build" -DUMC_FUZZ=ON -DUMC_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
for t in $targets; do
	cmake --build "$build" --target "fuzz_$t" -j2 >/dev/null || exit 1
done

failed=0
for t in $targets; do
	work=$build/fuzz-work/$t
	mkdir -p "$work/corpus"
	rm -f "$work"/fuzz-*.log
	# -jobs=1 -workers=1: one fuzzing process, its output in fuzz-0.log.
	(cd "$work" && "$build/bin/fuzz_$t" -max_total_time="$secs" -jobs=1 -workers=1 \
		-print_final_stats=1 -artifact_prefix="$work/" \
		"$work/corpus" "$root/fuzz/corpus/$t" >"$work/driver.log" 2>&1)
	log=$work/fuzz-0.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" 2>/dev/null | tail -n 1)
	crashes=$(find "$work" -maxdepth 1 -type f \
		\( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	inputs=$(find "$work/corpus" -type f | wc -l)
	printf '%s: %s execs in %s s, %d crashes (working corpus: %d inputs)\n' \
		"$t" "${execs:-?}" "$secs" "$crashes" "$inputs"
	if [ -z "$execs" ] || [ "$crashes" -ne 0 ]; then
		failed=1
		tail -n 30 "$log" 2>/dev/null || cat "$work/driver.log"
	fi
done
exit $failed
