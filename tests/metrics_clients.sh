#!/usr/bin/env bash
# The exposition of `teller watch`'s metrics read by real clients: curl
# scrapes the server of tests/metrics_sample.c (every family filled, a
# hostile label among them), promtool (Debian's prometheus package, ~22 MB,
# installed here on demand, not by `make test`) parses and lints what came
# back. A copy with a label's quote left unescaped must fail promtool, so
# that the check is seen to be able to fail.
#   tests/metrics_clients.sh [BUILD_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
TELLER_WANT_PROMTOOL=1 "$ROOT/scripts/install-deps"
TMP=$(mktemp -d)
pid=
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "metrics clients: $*" >&2; exit 1; }

"$BUILD/metrics_sample" --serve 127.0.0.1:0 60 > "$TMP/port" &
pid=$!
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
port=$(cat "$TMP/port")
[ -n "$port" ] || fail "metrics_sample did not start"
url="http://127.0.0.1:$port"

curl -sS -f --max-time 5 -D "$TMP/headers" -o "$TMP/body" "$url/metrics"
grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$TMP/headers" ||
  fail "content type: $(grep -i '^content-type' "$TMP/headers")"
code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$url/nope")
[ "$code" = 404 ] || fail "GET /nope answered $code, not 404"
code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' -X POST "$url/metrics")
[ "$code" = 405 ] || fail "POST /metrics answered $code, not 405"

promtool --version 2>&1 | head -1
promtool check metrics < "$TMP/body" || fail "promtool rejects the exposition (above)"
sed 's/\\"a\\\\b/"a\\\\b/' "$TMP/body" > "$TMP/mangled"
cmp -s "$TMP/body" "$TMP/mangled" && fail "the mangled copy is the same: the sample lost its hostile label"
if promtool check metrics < "$TMP/mangled" > "$TMP/mangled.out" 2>&1; then
  fail "promtool accepts an unescaped quote: the check cannot fail"
fi
samples=$(grep -vc '^#' "$TMP/body")
echo "metrics clients: curl scraped $samples samples from $url/metrics; promtool check metrics: ok;" \
     "an unescaped quote: rejected ($(head -1 "$TMP/mangled.out"))"
