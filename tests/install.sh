#!/usr/bin/env bash
# install.sh - the install test (`make test-install`): `make install` into
# a temporary prefix, a program built against it with nothing but
# `pkg-config --cflags --libs teller` and run on real traces, the shared
# library's exports (the public API only), the man pages, `make uninstall`
# leaving nothing; then the same staged under DESTDIR. Exits non-zero at
# the first thing wrong.
#
# usage: tests/install.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "${1:?usage: tests/install.sh BUILD_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=$ROOT/../shared/data/traces
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

PREFIX=$TMP/prefix
make -s -C "$ROOT" install BUILD="$BUILD" PREFIX="$PREFIX" >"$TMP/install.log"
LIBDIR=$(dirname "$(find "$PREFIX" -name teller.pc)")/..
for f in bin/teller include/teller/teller.h include/teller/version.h share/man/man1/teller.1 \
         share/man/man1/teller-diagnose.1; do
  [ -e "$PREFIX/$f" ] || fail "$f is not installed"
done
for f in libteller.so libteller.a; do
  [ -e "$LIBDIR/$f" ] || fail "$f is not installed"
done
if [ -x "$BUILD/teller-mpi" ]; then [ -x "$PREFIX/bin/teller-mpi" ] || fail "teller-mpi is not installed"; fi
if [ -e "$BUILD/libteller_inject.so" ]; then [ -e "$LIBDIR/libteller_inject.so" ] || fail "the collector is not installed"; fi

# the shared library: its soname, and no symbol but the public API
soname=$(objdump -p "$LIBDIR/libteller.so" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libteller.so.0 ] || fail "soname is '$soname'"
others=$(nm -D --defined-only "$LIBDIR/libteller.so" | awk '$3 !~ /^teller_/ && $3 != "TELLER_0"')
[ -z "$others" ] || fail "libteller.so exports more than the API: $others"
nexp=$(nm -D --defined-only "$LIBDIR/libteller.so" | grep -c ' T teller_')
ndecl=$(grep -c '^    teller_' "$BUILD/teller.map")
[ "$nexp" = "$ndecl" ] || fail "libteller.so exports $nexp functions, the headers declare $ndecl"

# a program built with pkg-config alone, linked to the installed libteller.so
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$TMP/prog" "$ROOT/tests/install_prog.c" \
   $(pkg-config --cflags --libs teller) -Wl,-rpath,"$LIBDIR"
# grep without -q: one that stops at its match kills ldd with SIGPIPE, which
# pipefail reports as a failure
ldd "$TMP/prog" | grep "libteller.so.0 => $LIBDIR" > /dev/null || fail "the program does not use the installed library"
out=$("$TMP/prog" "$SHARED/hta/trace_filter/sampled_rank-0.json.gz" "$SHARED/hta/trace_filter/sampled_rank-1.json.gz")
echo "$out" | sed 's/^/  /'
grep -q "2 sources" <<< "$out" || fail "the program did not load both traces"
man -l "$PREFIX/share/man/man1/teller-diagnose.1" 2>/dev/null | grep -q -- "--log" ||
  grep -q -- '--log' "$PREFIX/share/man/man1/teller-diagnose.1" || fail "teller-diagnose(1) lacks --log"

make -s -C "$ROOT" uninstall PREFIX="$PREFIX" >"$TMP/uninstall.log"
left=$(find "$PREFIX" -mindepth 1)
[ -z "$left" ] || fail "uninstall left: $left"

# staged: DESTDIR, and a prefix that already has directories of its own
STAGE=$TMP/stage
mkdir -p "$STAGE/usr/local/bin" "$STAGE/usr/local/share/man/man1"
touch "$STAGE/usr/local/bin/other"
make -s -C "$ROOT" install BUILD="$BUILD" PREFIX=/usr/local DESTDIR="$STAGE" >"$TMP/install2.log"
[ -x "$STAGE/usr/local/bin/teller" ] || fail "nothing staged in DESTDIR"
grep -q '^prefix=${pcfiledir}' "$STAGE"/usr/local/lib*/pkgconfig/teller.pc || fail "teller.pc is not relocatable"
make -s -C "$ROOT" uninstall PREFIX=/usr/local DESTDIR="$STAGE" >"$TMP/uninstall2.log"
left=$(cd "$STAGE" && find . -mindepth 1 | sort | tr '\n' ' ')
[ "$left" = "./usr ./usr/local ./usr/local/bin ./usr/local/bin/other ./usr/local/share ./usr/local/share/man ./usr/local/share/man/man1 " ] ||
  fail "staged uninstall left: $left"
echo "install test: installed, built against, ran, uninstalled: ok"
