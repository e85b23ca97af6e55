#!/usr/bin/env bash
# demo.sh - umcast in one command: builds what it runs (the library and
# umc-mckey, if needed), then on the loopback interface starts two
# receivers and one send-only sender on a multicast group with umc-mckey,
# and shows each join and each receiver's count.  Exits 0 only if every
# receiver got every message.
#
#   scripts/demo.sh                 # 100 messages on 239.255.42.1
#   COUNT=1000 GROUP=239.1.2.3 scripts/demo.sh
#   BIN=/usr/bin scripts/demo.sh    # with umcast-tools installed: no build
#
# Env: BUILD (build directory, default build), BIN (where umc-mckey is
# installed: nothing is built), COUNT, SIZE, GROUP (239.x.x.x).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
count=${COUNT:-100}
size=${SIZE:-100}
group=${GROUP:-239.255.42.1}
bind=127.0.0.1		# the demo's traffic never leaves this host
case $group in
239.*) ;;
*) echo "GROUP must be in 239.0.0.0/8 (administratively scoped)"; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/umcast-demo.XXXXXX")
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${BIN:-}" ]; then
	mckey=$BIN/umc-mckey
	[ -x "$mckey" ] || { echo "demo: no umc-mckey in $BIN"; exit 2; }
	echo "using $mckey"
else
	mckey=$build/bin/umc-mckey
	"$root/scripts/deps.sh" build || { echo "demo: the build's packages are not installed"; exit 1; }
	t0=$SECONDS
	echo "building libumcast and umc-mckey (only what the demo runs) in $build:"
	echo "about half a minute on 2 CPUs the first time, seconds after that ..."
	if ! { cmake -S "$root" -B "$build" &&
		cmake --build "$build" -j"$(nproc)" --target umc-mckey; } >"$work/build.log" 2>&1; then
		tail -n 30 "$work/build.log"
		echo "demo: build failed (the last lines of its log above)"
		exit 1
	fi
	echo "built in $((SECONDS - t0)) s"
fi

# run NAME ARGS... : umc-mckey in the background, bounded, output to a file
run() {
	local name=$1
	shift
	: >"$work/$name.out"	# exists before joined() looks at it
	timeout -k 2 60 "$mckey" "$@" >"$work/$name.out" 2>"$work/$name.err" &
	pids+=("$!")
	eval "pid_$name=\$!"
}

# joined NAME : wait (at most 10 s) for NAME's "joined" line, then show it
joined() {
	local name=$1 pidvar="pid_$1" end=$((SECONDS + 10)) line
	while [ $SECONDS -le $end ]; do
		line=$(grep -m1 '^mckey: joined dgid:' "$work/$name.out")
		if [ -n "$line" ]; then
			printf '%-10s %s\n' "$name:" "$line"
			return 0
		fi
		kill -0 "${!pidvar}" 2>/dev/null || break
		sleep 0.02	# polling the output file, bounded by $end
	done
	echo "demo: $name did not join:"; cat "$work/$name.out" "$work/$name.err"
	exit 1
}

# result NAME : wait for NAME to exit, show its count line; 0 if it succeeded
result() {
	local name=$1 pidvar="pid_$1" rc=0
	wait "${!pidvar}" || rc=$?
	printf '%-10s %s\n' "$name:" "$(grep -E '^mckey: (sent|received) ' "$work/$name.out")"
	if [ $rc -ne 0 ]; then
		echo "demo: $name failed (exit status $rc):"
		cat "$work/$name.out" "$work/$name.err"
	fi
	return $rc
}

echo "group $group on $bind: 2 receivers (full members), 1 sender (send-only), $count messages of $size bytes"
# -P: the sender is umc-mckey, so every payload's pattern is checked (it
# needs room for umc-mckey's 8-byte marker).
check=
[ "$size" -ge 8 ] 2>/dev/null && check=-P
run receiver1 -m "$group" -b $bind -C "$count" -S "$size" $check
run receiver2 -m "$group" -b $bind -C "$count" -S "$size" $check
joined receiver1
joined receiver2
# Both receivers are attached: the sender needs no pause (-w 0).
run sender -m "$group" -b $bind -s -o -w 0 -C "$count" -S "$size"
joined sender

ok=1
result sender || ok=0
result receiver1 || ok=0
result receiver2 || ok=0
for r in receiver1 receiver2; do
	grep -qx "mckey: received $count messages" "$work/$r.out" || ok=0
done
if [ $ok -eq 1 ]; then
	echo "demo OK: every receiver got all $count messages${check:+, each checked}"
	exit 0
fi
echo "demo FAILED"
exit 1
