#!/usr/bin/env bash
# man-pages.sh - the man pages, made by help2man from `teller --help` and
# each command's --help (whose text comes from the command's option table),
# so that they say what the program says: teller(1) and teller-CMD(1), one
# per command that `teller --help` lists. Run by the build (CMakeLists.txt).
#
# usage: scripts/man-pages.sh HELP2MAN TELLER OUTDIR
set -euo pipefail
H2M=$1 TELLER=$2 OUT=$3
# the same date whenever the pages are made from the same sources
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || echo 0)}
mkdir -p "$OUT"
rm -f "$OUT"/*.1
version=$("$TELLER" --version | awk '{print $2}')
"$H2M" --no-info --no-discard-stderr --version-string="$version" \
  -n "diagnose slow or hung steps of LLM inference services" -o "$OUT/teller.1.tmp" "$TELLER"
# the command list of `teller --help`: "  NAME      what it does"
"$TELLER" --help | awk '/^Commands:/ {on = 1; next} on && /^$/ {exit} on {print}' |
while read -r cmd about; do
  "$H2M" --no-info --no-discard-stderr --version-string="$version" --help-option="$cmd --help" \
    -n "$about" -o "$OUT/teller-$cmd.1.tmp" "$TELLER"
  upper=$(echo "teller-$cmd" | tr a-z A-Z)
  sed -e "s/^\\.TH TELLER /.TH $upper /" -e "s/^teller \\\\- /teller-$cmd \\\\- /" \
      "$OUT/teller-$cmd.1.tmp" > "$OUT/teller-$cmd.1"
  rm "$OUT/teller-$cmd.1.tmp"
  printf '.SH "SEE ALSO"\n.BR teller (1)\n' >> "$OUT/teller-$cmd.1"
done
mv "$OUT/teller.1.tmp" "$OUT/teller.1"
