#!/usr/bin/env python3
"""exports.py - the linker version script of libteller.so, made from the public headers.

Every function declared in include/teller/*.h (not the static inline ones they define)
is exported; every other symbol of the library is local, so that the shared library's
ABI is exactly its headers. A declaration the library does not define fails the link
of the tests' check (python/tests/test_abi.py), not here.

usage: exports.py -o teller.map HEADER...
"""
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)
    # the C++ guard's brace (its closing one is dropped as unmatched below)
    return re.sub(r'extern\s*"C"\s*{', " ", text)


def drop_bodies(text):
    """Removes every {...} block: struct and enum bodies, static inline function bodies."""
    out, depth = [], 0
    for ch in text:
        if ch == "{":
            depth += 1
            out.append(";" if depth == 1 else "")
        elif ch == "}":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def declared(text):
    names = []
    for decl in drop_bodies(strip_comments(text)).split(";"):
        if re.search(r"\b(static|typedef)\b", decl):
            continue
        m = re.search(r"\b(teller_\w+)\s*\(", decl)
        if m:
            names.append(m.group(1))
    return names


def main(argv):
    if len(argv) < 3 or argv[0] != "-o":
        sys.exit(__doc__.strip().splitlines()[-1])
    names = set()
    for path in argv[2:]:
        with open(path, encoding="utf-8") as f:
            names.update(declared(f.read()))
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write("TELLER_0 {\n  global:\n")
        for n in sorted(names):
            f.write("    %s;\n" % n)
        f.write("  local:\n    *;\n};\n")


if __name__ == "__main__":
    main(sys.argv[1:])
