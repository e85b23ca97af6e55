#!/usr/bin/env bash
# test_tools.sh - every tool answers -h, --help and --version alike, and
# spells a shared option one way:
#
#  1. -h and --help exit 0 with the usage on stdout (first line "usage:")
#     and nothing on stderr, the same text both ways; --version exits 0
#     with "TOOL (umcast) VERSION", VERSION the project's;
#  2. an unknown option is a usage error: non-zero, the usage printed (on
#     stderr; umc-mckey on stdout with exit 1, as rdma-core's mckey);
#  3. one spelling per option, the old one still accepted where it
#     shipped: umc-sa's SM_Key is --sm-key, as umc-sm's, and --smkey too;
#     umc-perf's timeout is -t, as umc-mckey's and umc-sa's, and -T too.
#
# Env: UMC_BIN (the tools), UMC_VERSION (ctest sets both).
set -u
bin=${UMC_BIN:?UMC_BIN is set by ctest}
version=${UMC_VERSION:?UMC_VERSION is set by ctest}
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

# run NAME CMD...: CMD bounded, stdout and stderr in $work/NAME.{out,err}; rc in $rc
run() {
	local name=$1
	shift
	timeout 10 "$@" >"$work/$name.out" 2>"$work/$name.err"
	rc=$?
}

tools=(umc-mckey umc-perf umc-run umc-sa umc-sm umc-ctl umc-stat umc-gapwatch udp-perf)
[ -x "$bin/fi-perf" ] && tools+=(fi-perf) # built only with libfabric-dev

# 1. -h, --help, --version
for t in "${tools[@]}"; do
	for h in -h --help; do
		run "$t$h" "$bin/$t" "$h"
		if [ $rc = 0 ] && head -n 1 "$work/$t$h.out" | grep -q '^usage:' && [ ! -s "$work/$t$h.err" ]; then
			ok "$t $h: exit 0, usage on stdout"
		else
			bad "$t $h: exit $rc, stdout '$(head -n 1 "$work/$t$h.out")', stderr '$(head -n 1 "$work/$t$h.err")'"
		fi
	done
	cmp -s "$work/$t-h.out" "$work/$t--help.out" || bad "$t: -h and --help print different texts"
	grep -q -- '--version' "$work/$t--help.out" || bad "$t --help does not mention --version"
	run "$t-v" "$bin/$t" --version
	if [ $rc = 0 ] && [ "$(cat "$work/$t-v.out")" = "$t (umcast) $version" ] && [ ! -s "$work/$t-v.err" ]; then
		ok "$t --version: $(cat "$work/$t-v.out")"
	else
		bad "$t --version: exit $rc, '$(cat "$work/$t-v.out" "$work/$t-v.err")', expected '$t (umcast) $version'"
	fi
done

# 2. an unknown option
for t in "${tools[@]}"; do
	run "$t-x" "$bin/$t" --no-such-option
	out=err
	[ "$t" = umc-mckey ] && out=out
	if [ $rc != 0 ] && grep -q '^usage:' "$work/$t-x.$out" &&
		{ [ "$t" != umc-mckey ] || [ $rc = 1 ]; }; then
		ok "$t --no-such-option: exit $rc, usage on std$out"
	else
		bad "$t --no-such-option: exit $rc, no usage on std$out"
	fi
done

# 3. one spelling per option; the old one still works
for k in --sm-key --smkey; do
	run "sa$k" "$bin/umc-sa" "$k" 0xzz -g
	if [ $rc = 2 ] && grep -q -- '--sm-key 0xzz: not a number' "$work/sa$k.err"; then
		ok "umc-sa $k is the SM_Key option"
	else
		bad "umc-sa $k 0xzz: exit $rc, '$(cat "$work/sa$k.err")'"
	fi
done
grep -q -- '--sm-key' "$work/umc-sm--help.out" || bad "umc-sm --help does not say --sm-key"
for t in -t -T; do
	run "perf$t" "$bin/umc-perf" -m 239.1.7.1 "$t" 0
	if [ $rc = 2 ] && grep -q -- "invalid value '0' for $t (1\.\." "$work/perf$t.err"; then
		ok "umc-perf $t is the timeout option"
	else
		bad "umc-perf $t 0: exit $rc, '$(cat "$work/perf$t.err")'"
	fi
done

summary
