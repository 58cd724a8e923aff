#!/usr/bin/env bash
# make freethreaded: a free-threaded CPython (PEP 703) and a venv for it, .venv-ft/, holding tickpar
# and what a cell needs (docs/explanation/design.md §11; docs/how-to/free-threaded.md).
#
#  1. The interpreter. In this order:
#     - $TICKPAR_FT_PYTHON, when set (it must be a free-threaded build);
#     - python3.14t, then python3.13t, on PATH;
#     - the one this script built before, in the cache ($TICKPAR_CACHE, default .cache/ in the checkout);
#     - otherwise it builds CPython 3.13 with --disable-gil from Debian 13's python3.13 source package
#       (fetched with a temporary apt source list: the machine's own lists may be Debian 12's, which has
#       no 3.13) into the cache, and reuses it on every later run.
#  2. The venv ($TICKPAR_FT_VENV, default .venv-ft/): the cell's own dependencies, named in
#     pyproject.toml ([tool.tickpar] cell-dependencies, with [project] dependencies' ranges), then tickpar
#     installed editable with --no-deps: the pipeline's dependencies (snakemake, pandas, matplotlib,
#     jsonschema, ...) do not all install on a free-threaded interpreter, and a cell needs none of them.
#     With --test, also what `make test-ft` needs ([tool.tickpar] cell-test-dependencies).
#
# Usage: tools/freethreaded.sh [--test]. Exit status 0 with .venv-ft/bin/tickpar in place; otherwise one
# line on stderr says what is missing. Environment: TICKPAR_CACHE (the interpreter's cache, default .cache/),
# TICKPAR_FT_VENV, TICKPAR_FT_PYTHON, JOBS (make -j, default 2), DEBIAN_MIRROR (default: the Debian mirror
# in /etc/apt, else deb.debian.org).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${TICKPAR_CACHE:-$ROOT/.cache}
VENV=${TICKPAR_FT_VENV:-$ROOT/.venv-ft}
JOBS=${JOBS:-2}
DEBIAN_SUITE=trixie
SRC_PACKAGE=python3.13
PREFIX=$CACHE/cpython-3.13t
START=$SECONDS

say() { printf '[freethreaded %3ds] %s\n' $((SECONDS - START)) "$*"; }
die() { printf 'make freethreaded: %s\n' "$*" >&2; exit 1; }

# A free-threaded interpreter: built with Py_GIL_DISABLED and running with the GIL off.
is_freethreaded() {
    "$1" -c 'import sys, sysconfig
sys.exit(0 if sysconfig.get_config_var("Py_GIL_DISABLED") and not sys._is_gil_enabled() else 1)' \
        >/dev/null 2>&1
}

find_interpreter() {
    if [ -n "${TICKPAR_FT_PYTHON:-}" ]; then
        is_freethreaded "$TICKPAR_FT_PYTHON" \
            || die "TICKPAR_FT_PYTHON=$TICKPAR_FT_PYTHON is not a free-threaded CPython (Py_GIL_DISABLED)"
        echo "$TICKPAR_FT_PYTHON"; return
    fi
    local name path
    for name in python3.14t python3.13t; do
        if path=$(command -v "$name") && is_freethreaded "$path"; then echo "$path"; return; fi
    done
    if [ -f "$PREFIX/.complete" ] && is_freethreaded "$PREFIX/bin/python3.13t"; then
        echo "$PREFIX/bin/python3.13t"; return
    fi
}

# The Debian mirror this machine already uses (deb822 .sources or one-line .list), not its security one.
debian_mirror() {
    if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
    local f uri
    for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        uri=$( { grep -hoE '^[[:space:]]*URIs:[[:space:]]*[^[:space:]]+' "$f" | awk '{print $2}'
                 grep -hoE '^[[:space:]]*deb(-src)?[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+' "$f" \
                     | awk '{print $NF}'; } \
               | grep -E '/debian/?$' | grep -v security | head -n1 || true)
        if [ -n "$uri" ]; then echo "${uri%/}"; return; fi
    done
    echo "http://deb.debian.org/debian"
}

# Every tool and header the build needs, each missing one named in one line.
check_build_deps() {
    local tool missing=()
    for tool in apt-get dpkg-source cc make tar xz; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    [ ${#missing[@]} -eq 0 ] || die "missing build tool(s): ${missing[*]} (Debian: apt-get install build-essential dpkg-dev xz-utils)"
    # header -> Debian package. zlib and openssl: pip needs them; libffi: ctypes (cffi-based wheels).
    local pair header pkg
    for pair in zlib.h:zlib1g-dev openssl/ssl.h:libssl-dev ffi.h:libffi-dev; do
        header=${pair%%:*}; pkg=${pair#*:}
        printf '#include <%s>\n' "$header" | cc -E -x c - >/dev/null 2>&1 || missing+=("$pkg ($header)")
    done
    [ ${#missing[@]} -eq 0 ] || die "missing build dependency: ${missing[*]}: apt-get install ${missing[*]%% *}"
    # Optional modules: built when their headers are there; a cell needs none of them.
    for pair in bzlib.h:libbz2-dev lzma.h:liblzma-dev sqlite3.h:libsqlite3-dev; do
        header=${pair%%:*}; pkg=${pair#*:}
        printf '#include <%s>\n' "$header" | cc -E -x c - >/dev/null 2>&1 \
            || say "note: $pkg ($header) missing: that stdlib module will not be built (a cell does not need it)"
    done
}

# Debian 13's python3.13 source package into $CACHE/src (kept: a failed build does not download again).
fetch_source() {
    local src=$CACHE/src
    mkdir -p "$src"
    ORIG=$(ls "$src"/${SRC_PACKAGE}_*.orig.tar.xz 2>/dev/null | sort -V | tail -n1 || true)
    if [ -n "$ORIG" ]; then say "source: reusing $(basename "$ORIG")"; return; fi
    local mirror keyring apt_dir
    mirror=$(debian_mirror)
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -r "$keyring" ] || die "missing build dependency: debian-archive-keyring ($keyring): apt-get install debian-archive-keyring"
    apt_dir=$(mktemp -d)
    # A RETURN trap stays set after this function returns (and would then fire in main, where apt_dir is
    # unbound under set -u): it removes the folder and itself.
    trap 'rm -rf "$apt_dir"; trap - RETURN' RETURN
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb-src [signed-by=$keyring] $mirror $DEBIAN_SUITE main" >"$apt_dir/sources.list"
    local apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
                    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
                    -o "APT::Sandbox::User=root" -q)
    say "source: apt-get update (deb-src $mirror $DEBIAN_SUITE, in a temporary apt directory)"
    apt-get "${apt_opts[@]}" update >"$CACHE/apt.log" 2>&1 \
        || die "apt-get update of $mirror $DEBIAN_SUITE failed (no network to the Debian mirror? see $CACHE/apt.log)"
    say "source: apt-get source --download-only $SRC_PACKAGE"
    (cd "$src" && apt-get "${apt_opts[@]}" source --download-only "$SRC_PACKAGE") >>"$CACHE/apt.log" 2>&1 \
        || die "apt-get source --download-only $SRC_PACKAGE failed (see $CACHE/apt.log)"
    ORIG=$(ls "$src"/${SRC_PACKAGE}_*.orig.tar.xz 2>/dev/null | sort -V | tail -n1 || true)
    [ -n "$ORIG" ] || die "no ${SRC_PACKAGE}_*.orig.tar.xz in the downloaded source package (see $CACHE/apt.log)"
    say "source: $(basename "$ORIG")"
}

# configure --disable-gil, make, make install into $PREFIX; a stamp marks a finished install.
build() {
    local build_dir=$CACHE/build log=$CACHE/build.log steps
    rm -rf "$build_dir" "$PREFIX"
    mkdir -p "$build_dir"
    say "build: unpacking"
    tar -xf "$ORIG" -C "$build_dir" --strip-components=1
    : >"$log"
    run_step() {  # name, command...: output to the log; on failure, its tail and a one-line error
        local name=$1; shift
        say "build: $name (log: $log)"
        (cd "$build_dir" && "$@") >>"$log" 2>&1 &
        local pid=$! waited=0 status=0
        while kill -0 "$pid" 2>/dev/null; do  # progress: compiled files so far, every 20 s
            sleep 1; waited=$((waited + 1))
            if [ $((waited % 20)) -eq 0 ]; then
                say "build: $name: $(grep -c -E '^(gcc|cc|clang)( | .* )-c ' "$log") C files compiled"
            fi
        done
        wait "$pid" || status=$?
        if [ "$status" -ne 0 ]; then
            tail -n 15 "$log" >&2
            die "CPython $name failed (full log: $log)"
        fi
    }
    run_step configure ./configure --disable-gil --prefix="$PREFIX" --without-ensurepip
    grep -q '^#define Py_GIL_DISABLED 1' "$build_dir/pyconfig.h" \
        || die "configure did not enable --disable-gil (this source is older than 3.13?)"
    steps=$(printf 'make -j%s (about 2 minutes on 2 cores)' "$JOBS")
    run_step "$steps" make -j"$JOBS"
    run_step "make install" make install
    is_freethreaded "$PREFIX/bin/python3.13t" || die "the built $PREFIX/bin/python3.13t is not free-threaded"
    touch "$PREFIX/.complete"
    rm -rf "$build_dir"
}

# The cell's dependencies: pyproject.toml's [tool.tickpar] cell-dependencies (names), with the version ranges
# of [project] dependencies; with --test also cell-test-dependencies, with the [test] extra's ranges.
cell_requirements() {
    "$1" - "$ROOT/pyproject.toml" "$WITH_TEST" <<'EOF'
import re, sys, tomllib
with open(sys.argv[1], "rb") as f:
    data = tomllib.load(f)
def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()
def pins(reqs):
    return {norm(re.match(r"[A-Za-z0-9._-]+", r).group(0)): r for r in reqs}
project, tool = data["project"], data.get("tool", {}).get("tickpar", {})
lists = [(tool.get("cell-dependencies", []), pins(project.get("dependencies", [])), "[project] dependencies")]
if sys.argv[2] == "1":
    extra = project.get("optional-dependencies", {}).get("test", [])
    lists.append((tool.get("cell-test-dependencies", []), pins(extra), "the [test] extra"))
for names, known, where in lists:
    for name in names:
        if norm(name) not in known:
            sys.exit(f"pyproject.toml: [tool.tickpar] names {name!r}, which is not in {where}")
        print(known[norm(name)])
EOF
}

make_venv() {
    local python=$1 py reqs
    py=$VENV/bin/python
    if [ -x "$py" ] && ! is_freethreaded "$py"; then
        say "venv: $VENV is not on a free-threaded interpreter: recreating it"
        rm -rf "$VENV"
    fi
    if [ ! -x "$py" ]; then
        say "venv: creating $VENV with $python"
        "$python" -m venv "$VENV" || die "could not create $VENV with $python (is its ensurepip there?)"
    fi
    local listed
    listed=$(cell_requirements "$py") || die "could not read the cell's dependencies from pyproject.toml"
    [ -n "$listed" ] || die "pyproject.toml has no [tool.tickpar] cell-dependencies"
    mapfile -t reqs <<<"$listed"
    say "venv: pip install ${reqs[*]}"
    "$py" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --prefer-binary "${reqs[@]}" \
        || die "pip could not install the cell's dependencies on $($py -VV | head -n1): ${reqs[*]}"
    say "venv: pip install --no-deps -e $ROOT"
    "$py" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --no-deps -e "$ROOT" \
        || die "pip install --no-deps -e $ROOT failed under $VENV"
    is_freethreaded "$py" || die "$py runs with the GIL enabled"
    [ -x "$VENV/bin/tickpar" ] || die "$VENV/bin/tickpar is missing after the install"
}

main() {
    WITH_TEST=0
    case "${1:-}" in
        --test) WITH_TEST=1 ;;
        "") ;;
        *) die "usage: tools/freethreaded.sh [--test]   (--test: also what make test-ft needs)" ;;
    esac
    mkdir -p "$CACHE"
    local python
    python=$(find_interpreter)
    if [ -n "$python" ]; then
        say "interpreter: $python ($("$python" -VV | head -n1))"
    else
        say "no python3.14t/python3.13t on PATH and none cached in $CACHE: building CPython 3.13 --disable-gil"
        check_build_deps
        fetch_source
        build
        python=$PREFIX/bin/python3.13t
        say "interpreter: built $python ($("$python" -VV | head -n1))"
    fi
    make_venv "$python"
    say "done: $VENV/bin/tickpar ($("$VENV/bin/python" -c 'import sys; print("GIL enabled" if sys._is_gil_enabled() else "GIL disabled")'))"
}

main "$@"
