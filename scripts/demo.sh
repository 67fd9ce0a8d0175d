#!/usr/bin/env bash
# Installs what is missing, builds chainerc (release, in build/), and runs the
# main job: the seed tutorial's computations written in C against the C API
# (examples/tutorial/tutorial.c).
#
# Environment:
#   CH_BUILD_DIR   build folder (default: build, shared with scripts/test.sh)
#   CH_MESON_ARGS  extra `meson setup` options
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$CH_ROOT"

build_dir="${CH_BUILD_DIR:-build}"
ch_ensure_deps
ch_configure "$build_dir"
ch_build "$build_dir"

demo="$build_dir/examples/tutorial/tutorial"
if [ ! -x "$demo" ]; then
  ch_die "the tutorial program $demo was not built (is examples/tutorial/meson.build there, and -Dexamples=true?)"
fi
ch_log "running $demo"
exec "$demo" "$@"
