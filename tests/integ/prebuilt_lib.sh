# shellcheck shell=bash
# prebuilt_lib.sh - what the tests of prebuilt rdma-core programs under
# umc-run share (sourced, not a test by itself).
#
#   UMC_RUN     umc-run to use (default $UMC_BIN/umc-run)
#   prebuilt_env
#               exports what a program not built with the sanitizers needs
#               to load a drop-in library that was: with UMC_SANITIZE
#               naming address, the ASan runtime must be the first library
#               (LD_PRELOAD), and leaks are not checked (a prebuilt
#               program's own leaks are not umcast's).

UMC_RUN=${UMC_RUN:-${UMC_BIN:-}/umc-run}

prebuilt_env() {
	local asan
	case ${UMC_SANITIZE:-} in
	*address*)
		asan=$(${CC:-cc} -print-file-name=libasan.so)
		if [ ! -e "$asan" ]; then
			echo "no ASan runtime for the sanitized drop-in library ($asan)"
			exit 1
		fi
		export LD_PRELOAD=$asan${LD_PRELOAD:+:$LD_PRELOAD}
		export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
		;;
	esac
}
