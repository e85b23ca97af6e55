#!/usr/bin/env bash
# deb-build.sh - in a pristine Debian 12 (.ci/fresh-debian12.sh, with
# UMC_FRESH_OUT): build the Debian packages as a packager would, check
# them, and leave them in /out for .ci/deb-install.sh.
#
#  1. apt-get build-dep (debian/control's Build-Depends), then
#     dpkg-buildpackage -b -us -uc: libumcast1, libumcast-dev, umcast-tools,
#     umc-sm;
#  2. lintian on the result: any error fails; the warnings are printed;
#  3. libumcast-dev works: with the packages installed, the README's
#     examples/hello_mcast.c builds with `pkg-config --cflags --libs
#     umcast` alone, against /usr/include/umcast, and its receiver gets its
#     send-only sender's message.
set -eu
export DEBIAN_FRONTEND=noninteractive
[ -d /out ] || { echo "deb-build.sh: no /out (UMC_FRESH_OUT)"; exit 2; }
cd "$(dirname "$0")/.."
start=$SECONDS
say() { echo "deb-build: $* (at $((SECONDS - start)) s)"; }

say "installing the build dependencies"
apt-get update -qq
apt-get build-dep -y -qq --no-install-recommends ./ >/dev/null
apt-get install -y -qq --no-install-recommends lintian >/dev/null

say "dpkg-buildpackage -b -us -uc"
dpkg-buildpackage -b -us -uc >../build.log 2>&1 || { tail -n 40 ../build.log; exit 1; }
changes=$(ls ../umcast_*.changes)
ls -l ../*.deb

say "lintian"
lintian --fail-on error --display-info --pedantic "$changes" || { echo "deb-build: lintian found errors"; exit 1; }

say "libumcast-dev: a program built with pkg-config alone"
apt-get install -y -qq ../*.deb >/dev/null
# shellcheck disable=SC2046 # pkg-config's flags, one word each
cc -O2 -o /tmp/hello_mcast examples/hello_mcast.c $(pkg-config --cflags --libs umcast)
cflags=$(pkg-config --cflags umcast)
[ "${cflags% }" = "-I/usr/include/umcast" ] || { echo "pkg-config --cflags umcast: $cflags"; exit 1; }
UMC_BIN=/tmp bash tests/integ/test_example.sh

# The four packages (the -dbgsym ones stay behind).
find .. -maxdepth 1 -name '*.deb' ! -name '*-dbgsym_*' -exec cp {} /out/ \;
say "done: $(cd /out && echo ./*.deb)"
