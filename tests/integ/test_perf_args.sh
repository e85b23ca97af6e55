#!/usr/bin/env bash
# test_perf_args.sh - the measuring tools' -S bound and whole-number
# options, as a user meets them.
#
# Every message of umc-perf, udp-perf and fi-perf carries its 64-bit
# sequence number (loss accounting, the sender's end marker, ping's match
# of its echo), so -S below 8, or not a number at all ("nan"), is refused
# at once (exit 2, the option's range on stderr) instead of a ping that
# waits for its timeout.  At the bound itself, 8 bytes, a round-trip run
# of umc-perf and of udp-perf completes on loopback with every round trip
# counted and none lost.  A count or size with a fraction left (-S 8.5)
# is refused too, where it used to be cut down without a word.  udp-perf
# -V (raw UDP doing RoCEv2's user-space work with umcast's codecs, a
# benchmark floor) completes its round trips, counts what it receives at
# rate, and checks what it receives.
#
# Env: UMC_BUILD_DIR (ctest sets it).
set -u
bin=${UMC_BUILD_DIR:?UMC_BUILD_DIR is set by ctest}/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/umc-perf-args.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
ok() { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# usage_error LABEL PATTERN CMD...: CMD (bounded) exits 2 with PATTERN on stderr.
usage_error() {
	local label=$1 pattern=$2 rc
	shift 2
	timeout 10 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 2 ] && grep -q -- "$pattern" "$tmp/err"; then
		ok "$label: exit 2, $(cat "$tmp/err")"
	else
		bad "$label: exit $rc, stderr: $(head -2 "$tmp/err")"
	fi
}

tools=(umc-perf udp-perf)
[ -x "$bin/fi-perf" ] && tools+=(fi-perf) # built only with libfabric-dev

# 1. -S 7, and -S nan (a NaN is below no bound and above none): refused
# by the option parser, in every mode.
for t in "${tools[@]}"; do
	for mode in "-L ping" "-L pong" "-s" ""; do
		for v in 7 nan; do
			# shellcheck disable=SC2086
			usage_error "$t ${mode:-(receiver)} -S $v" "invalid value '$v' for -S (8\.\." \
				"$bin/$t" $mode -m 239.1.7.1 -S $v -n 10
		done
	done
done

# udp-perf -V with -c: refused (a connected socket's IPv4 IDs, which the
# ICRC covers, are not 0).
usage_error "udp-perf -V -c" "-V and -c: a connected socket's IPv4 IDs are not 0" \
	"$bin/udp-perf" -V -c -s -m 239.1.7.1 -n 10

# A fraction where a count is meant (-S 8.5 used to become 8 without a
# word): refused, in each tool; a fractional -D and a suffixed count are not.
for t in "${tools[@]}"; do
	usage_error "$t -S 8.5" "invalid value '8.5' for -S (not a whole number)" \
		"$bin/$t" -s -m 239.1.7.1 -S 8.5 -n 10
	usage_error "$t -n 1.5" "invalid value '1.5' for -n (not a whole number)" \
		"$bin/$t" -s -m 239.1.7.1 -n 1.5
	usage_error "$t -n 1.0005k" "invalid value '1.0005k' for -n (not a whole number)" \
		"$bin/$t" -s -m 239.1.7.1 -n 1.0005k
	# 1.001k is 1000.9999999999999 in binary: still the whole 1001.
	usage_error "$t -n 1.5k -w 1.001k -S 2.01k -D 0.5 -B x" "invalid value 'x' for -B" \
		"$bin/$t" -s -m 239.1.7.1 -n 1.5k -w 1.001k -S 2.01k -D 0.5 -B x
done

# umc-perf above the path MTU (4096 on umc_lo): a usage error too, found
# once the port is known.
usage_error "umc-perf -S 4097" "-S 4097 is above the path MTU 4096" \
	"$bin/umc-perf" -L ping -m 239.1.7.1 -S 4097 -n 10

# roundtrip TOOL GROUP "PONG_ARGS" "PING_ARGS" N: a bounded round-trip run;
# sets $rc (the ping's exit status), $line (its result line) and $prc (the
# pong's), or returns 1 when the pong never got ready.
roundtrip() {
	local t=$1 group=$2 pargs=$3 iargs=$4 n=$5 pong rfd
	# The pong's ready byte (-R: joined, every receive posted), waited for
	# (bounded) instead of a sleep: a ping sent before it is lost, and
	# lost counts the warm-up round trips too.
	rm -f "$tmp/ready"
	mkfifo "$tmp/ready"
	exec {rfd}<>"$tmp/ready"
	# shellcheck disable=SC2086
	timeout 30 "$bin/$t" -L pong -m "$group" $pargs -I 2000 -T 20000 -R 9 9>"$tmp/ready" \
		>"$tmp/pong" 2>&1 &
	pong=$!
	if ! read -r -t 10 -N 1 -u "$rfd" _; then
		exec {rfd}<&-
		kill "$pong" 2>/dev/null
		wait "$pong"
		return 1
	fi
	exec {rfd}<&-
	# shellcheck disable=SC2086
	timeout 30 "$bin/$t" -L ping -m "$group" $iargs -n "$n" -w 10 >"$tmp/ping" 2>&1
	rc=$?
	wait $pong
	prc=$?
	line=$(grep '^result .*role=ping' "$tmp/ping")
}

# 2. -S 8: a round trip run completes, every round trip counted; so does
# udp-perf -V (umcast's codecs on raw UDP), at -S 8 and, with a pad, -S 10.
n=200
while read -r t group size args; do
	label="$t $args -S $size"
	if ! roundtrip "$t" "$group" "-S $size $args" "-S $size $args" $n; then
		bad "$label: the pong was not ready within 10 s: $(tail -2 "$tmp/pong")"
	elif [ $rc = 0 ] && [[ "$line" == *" size=$size iters=$n lost=0 "* ]]; then
		ok "$label: $n round trips, none lost"
	else
		bad "$label: exit $rc: $(tail -2 "$tmp/ping")"
	fi
done <<EOF2
umc-perf 239.1.7.11 8
udp-perf 239.1.7.21 8
udp-perf 239.1.7.31 8 -V
udp-perf 239.1.7.41 10 -V
EOF2

# 2b. udp-perf -V receives at rate too (its datagrams are umcast's length,
# 8 bytes shorter than the other baselines'): every message counted.
rm -f "$tmp/ready"
mkfifo "$tmp/ready"
exec {rfd}<>"$tmp/ready"
timeout 30 "$bin/udp-perf" -V -m 239.1.7.61 -S 10 -I 500 -T 20000 -R 9 9>"$tmp/ready" \
	>"$tmp/recv" 2>&1 &
recv=$!
if read -r -t 10 -N 1 -u "$rfd" _; then
	timeout 30 "$bin/udp-perf" -V -s -m 239.1.7.61 -S 10 -n 300 -r 100k >"$tmp/send" 2>&1
fi
exec {rfd}<&-
wait $recv
rrc=$?
line=$(grep '^result .*role=recv' "$tmp/recv")
if [ $rrc = 0 ] && [[ "$line" == *" msgs=300 "*" lost=0 "* ]]; then
	ok "udp-perf -V receiver: 300 of 300 messages"
else
	bad "udp-perf -V receiver: exit $rrc: $(tail -2 "$tmp/recv")"
fi

# 3. udp-perf -V checks what it receives: a -V pong takes the first -G
# datagram (no BTH, no ICRC) as a broken measurement and exits 1.
if ! roundtrip udp-perf 239.1.7.51 "-S 8 -V" "-S 8 -G -I 200" 3; then
	bad "udp-perf -V pong, -G ping: the pong was not ready within 10 s"
elif [ $prc = 1 ] && grep -q -- "-V: a datagram failed its RoCEv2 checks" "$tmp/pong" &&
	[[ "$line" == *" iters=0 lost="* ]]; then
	ok "udp-perf -V pong, -G ping: pong exit 1 ($(head -1 "$tmp/pong")), no echo"
else
	bad "udp-perf -V pong, -G ping: pong exit $prc, ping: $line; pong: $(tail -2 "$tmp/pong")"
fi

echo "$passes passed, $fails failed"
[ $fails = 0 ]
