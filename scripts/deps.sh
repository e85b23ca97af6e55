#!/usr/bin/env bash
# deps.sh - install what umcast needs on Debian 12, only what is missing.
#   scripts/deps.sh build      to build the library and tools (the demo)
#   scripts/deps.sh test       also what the tests use (cmocka, valgrind,
#                              pandoc and man for the manual pages, tshark,
#                              matplotlib for bench/plot.py's test, ...)
#   scripts/deps.sh bench      also the benchmarks' baselines (libfabric, OpenSM on ibsim)
#                              and what draws their pictures (matplotlib)
#   scripts/deps.sh fuzz       the build and clang's libFuzzer (scripts/fuzz.sh)
# Runs apt-get as root, or through sudo.
set -eu
pkgs=(build-essential cmake pkg-config libisal-dev zlib1g-dev)
case "${1:-test}" in
build) ;;
test) pkgs+=(libcmocka-dev valgrind pandoc man-db tshark iproute2 procps
	rdmacm-utils ibverbs-utils python3-pyverbs libibverbs-dev librdmacm-dev
	opensm ibsim-utils libumad2sim0 libibumad-dev python3-matplotlib) ;;
# bench: libfabric for the baseline; OpenSM on ibsim and libibumad for
# bench/sm-bench.sh (run by bench/run.sh); matplotlib for bench/plot.py.
bench) pkgs+=(libcmocka-dev libfabric-dev libfabric-bin opensm ibsim-utils libumad2sim0
	libibumad-dev python3-matplotlib) ;;
fuzz) pkgs+=(clang libclang-rt-dev) ;;
*) echo "usage: $0 build|test|bench|fuzz" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "installing with apt-get (a minute or a few, the first time): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
