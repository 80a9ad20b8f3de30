#!/usr/bin/env python3
"""check_html.py - an independent check of a teller HTML report.

Parses the file with Python's html.parser and fails (exit 1) when tags do
not balance (void elements aside), when any <script> element, external
resource (src=, href= other than #anchors, <link>, @import, url()) or
event-handler attribute appears, when raw control characters are left, or
when a percentage of 10000 % or more is printed (ratios that large are
written as xN).
Usage: check_html.py REPORT.html [...]
"""
import re
import sys
from html.parser import HTMLParser

VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
# SVG elements written self-closed
SELF = {"rect", "path", "line", "circle", "polygon", "polyline", "text", "title"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []

    def err(self, msg):
        line, col = self.getpos()
        self.errors.append(f"{line}:{col}: {msg}")

    def check_attrs(self, tag, attrs):
        if tag in ("script", "link", "iframe", "object", "embed", "img"):
            self.err(f"forbidden element <{tag}>")
        for k, v in attrs:
            if k.startswith("on"):
                self.err(f"event handler {k}= on <{tag}>")
            if k == "src":
                self.err(f"external resource src= on <{tag}>")
            if k in ("href", "xlink:href") and not (v or "").startswith("#"):
                self.err(f"non-local link {k}={v!r}")

    def handle_starttag(self, tag, attrs):
        self.check_attrs(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.check_attrs(tag, attrs)
        if tag not in VOID and tag not in SELF and tag != "svg":
            self.err(f"self-closed <{tag}/>")

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.err(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data):
        if any((ord(c) < 0x20 and c not in "\n\t") or ord(c) == 0x7F for c in data):
            self.err("raw control character in text")
        if self.stack and self.stack[-1] == "style" and ("@import" in data or "url(" in data):
            self.err("external resource in CSS")
        for m in re.finditer(r"([0-9]+(?:\.[0-9]+)?)\s*%", data):
            if float(m.group(1)) >= 10000:
                self.err(f"percentage {m.group(0)!r}: a ratio that large reads better as xN")


def main(paths):
    bad = 0
    for p in paths:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        c = Checker()
        c.feed(text)
        c.close()
        if c.stack:
            c.errors.append(f"unclosed at end: {c.stack}")
        for e in c.errors[:20]:
            print(f"{p}:{e}")
        bad += bool(c.errors)
        if not c.errors:
            print(f"{p}: ok ({len(text)} bytes)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
