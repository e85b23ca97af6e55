#!/usr/bin/env bash
# test_perf_args.sh - the measuring tools' -S bound, as a user meets it.
#
# Every message of umc-perf, udp-perf and fi-perf carries its 64-bit
# sequence number (loss accounting, the sender's end marker, ping's match
# of its echo), so -S below 8 is refused at once (exit 2, the option's
# range on stderr) instead of a ping that waits for its timeout.  At the
# bound itself, 8 bytes, a round-trip run of umc-perf and of udp-perf
# completes on loopback with every round trip counted and none lost.
#
# Env: UMC_BUILD_DIR (ctest sets it).
set -u
bin=${UMC_BUILD_DIR:?UMC_BUILD_DIR is set by ctest}/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/umc-perf-args.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
ok() { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

tools=(umc-perf udp-perf)
[ -x "$bin/fi-perf" ] && tools+=(fi-perf) # built only with libfabric-dev

# 1. -S 7: refused by the option parser, in every mode.
for t in "${tools[@]}"; do
	for mode in "-L ping" "-L pong" "-s" ""; do
		# shellcheck disable=SC2086
		timeout 10 "$bin/$t" $mode -m 239.1.7.1 -S 7 -n 10 >"$tmp/out" 2>"$tmp/err"
		rc=$?
		if [ $rc = 2 ] && grep -q "invalid value '7' for -S (8\.\." "$tmp/err"; then
			ok "$t ${mode:-(receiver)} -S 7: exit 2, $(cat "$tmp/err")"
		else
			bad "$t ${mode:-(receiver)} -S 7: exit $rc, stderr: $(head -2 "$tmp/err")"
		fi
	done
done

# 2. -S 8: a round trip run completes, every round trip counted.
n=200 group=239.1.7.11
for t in umc-perf udp-perf; do
	timeout 30 "$bin/$t" -L pong -m $group -S 8 -I 2000 -T 20000 >"$tmp/pong" 2>&1 &
	pong=$!
	sleep 0.5
	timeout 30 "$bin/$t" -L ping -m $group -S 8 -n $n -w 10 >"$tmp/ping" 2>&1
	rc=$?
	wait $pong
	line=$(grep '^result .*role=ping' "$tmp/ping")
	if [ $rc = 0 ] && [[ "$line" == *" size=8 iters=$n lost=0 "* ]]; then
		ok "$t -S 8: $n round trips, none lost"
	else
		bad "$t -S 8: exit $rc: $(tail -2 "$tmp/ping")"
	fi
	group=239.1.7.21
done

echo "$passes passed, $fails failed"
[ $fails = 0 ]
