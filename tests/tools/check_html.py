#!/usr/bin/env python3
"""check_html.py - an independent check of a teller HTML report.

Parses the file with Python's html.parser and fails (exit 1) when tags do
not balance (void elements aside), when any <script> element, external
resource (src=, href= other than #anchors, <link>, @import, url()) or
event-handler attribute appears, when raw control characters are left, or
when a percentage of 10000 % or more is printed (ratios that large are
written as xN), or when an SVG's text would be drawn smaller than 10 px in
an 800 px wide window.

That last check follows the page's own CSS far enough to know how wide each
SVG is drawn: an SVG that a rule lets shrink (`svg{max-width:100%}`) is
drawn at most as wide as the narrowest box it sits in at 800 px, the
window less the body's padding and a step section's padding and border
(NARROW_PX); one whose class sets `max-width:none` keeps its width and
must sit in a box whose class scrolls sideways (overflow-x:auto). Its
text's size is the one a CSS rule sets for it, else the nearest font-size
attribute on it or an SVG element around it, else the body's; all in px,
scaled by the drawn width over the viewBox's.
Usage: check_html.py REPORT.html [...]
"""
import re
import sys
from html.parser import HTMLParser

VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
# SVG elements written self-closed
SELF = {"rect", "path", "line", "circle", "polygon", "polyline", "text", "title"}
WINDOW_PX = 800
# the body's padding (24 px a side) and a step section's (16 px and a 1 px border a side)
NARROW_PX = WINDOW_PX - 2 * 24 - 2 * 17
MIN_TEXT_PX = 10


def css_rules(css):
    """[(selector, {property: value})] of a style sheet without @-rules."""
    rules = []
    for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        decl = {}
        for d in body.split(";"):
            if ":" in d:
                k, v = d.split(":", 1)
                decl[k.strip().lower()] = v.strip()
        for one in sel.split(","):
            rules.append((one.strip(), decl))
    return rules


def px(value):
    """The size in px of a font-size or font value ("11px", "14px/1.45 sans"), or None."""
    m = re.match(r"\s*([0-9.]+)px\b", value or "")
    if m:
        return float(m.group(1))
    m = re.search(r"(?:^|\s)([0-9.]+)px(?:/|\s)", value or "")
    return float(m.group(1)) if m else None


def matches(selector, tag, classes, ancestors):
    """Whether a simple selector (type, .class, type.class, "svg X": X inside an svg) picks the element."""
    parts = selector.split()
    if len(parts) == 2 and parts[0] == "svg":
        if "svg" not in [a[0] for a in ancestors]:
            return False
        selector = parts[1]
    elif len(parts) != 1:
        return False
    m = re.fullmatch(r"([a-z0-9]*)((?:\.[A-Za-z0-9_-]+)*)", selector)
    if not m:
        return False
    want_tag, want_cls = m.group(1), [c for c in m.group(2).split(".") if c]
    return (not want_tag or want_tag == tag) and all(c in classes for c in want_cls) and (want_tag or want_cls)


def css_value(rules, prop, tag, classes, ancestors):
    """The value the page's rules give prop on the element: class rules before type rules, later before earlier."""
    best, best_spec = None, -1
    for sel, decl in rules:
        v = decl.get(prop)
        if prop == "font-size" and v is None and "font" in decl:
            v = decl["font"]
        if v is None or not matches(sel, tag, classes, ancestors):
            continue
        spec = sel.count(".") * 10 + len(sel.split())
        if spec >= best_spec:
            best, best_spec = v, spec
    return best


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []
        self.css, self.rules = "", []
        self.open = []  # (tag, classes, attrs) of the open elements
        self.svg = None  # the SVG being read: its name and scale
        self.svgs = 0

    def legible(self, tag, attrs):
        """Checks the drawn size of an SVG's text (see the module's comment)."""
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "svg" and not [o for o in self.open if o[0] == "svg"]:
            vb = (a.get("viewbox") or "").split()
            name = a.get("aria-label") or "an svg"
            if len(vb) != 4 or float(vb[2]) <= 0:
                self.svg = None
                return
            width = float(a["width"]) if re.fullmatch(r"[0-9.]+", a.get("width") or "") else None
            fixed = css_value(self.rules, "max-width", "svg", classes, self.open) == "none"
            if fixed:
                scrolls = any(
                    re.search(r"auto|scroll", css_value(self.rules, "overflow-x", o[0], o[1], []) or
                              css_value(self.rules, "overflow", o[0], o[1], []) or "")
                    for o in self.open)
                if not scrolls:
                    self.err(f"{name}: drawn at its full width in no box that scrolls: it widens the page")
                drawn = width if width else NARROW_PX
            else:
                drawn = min(width, NARROW_PX) if width else NARROW_PX
            self.svg = (name, drawn / float(vb[2]))
            self.svgs += 1
        elif tag == "text" and self.svg:
            size = px(css_value(self.rules, "font-size", tag, classes, self.open))
            if size is None:
                for t, _, oa in reversed(self.open + [(tag, classes, a)]):
                    if "font-size" in oa:
                        size = float(re.match(r"[0-9.]+", oa["font-size"]).group(0))
                        break
            if size is None:
                size = px(css_value(self.rules, "font-size", "body", [], [])) or 16.0
            if size * self.svg[1] < MIN_TEXT_PX:
                self.err(f"{self.svg[0]}: text drawn {size * self.svg[1]:.1f} px high at {WINDOW_PX} px "
                         f"(font {size:g} px, scaled {self.svg[1]:.2f}); at least {MIN_TEXT_PX} px wanted")

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
        self.legible(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)
            self.open.append((tag, (dict(attrs).get("class") or "").split(), dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.check_attrs(tag, attrs)
        self.legible(tag, attrs)
        if tag not in VOID and tag not in SELF and tag != "svg":
            self.err(f"self-closed <{tag}/>")

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if tag == "style":
            self.rules = css_rules(self.css)
        if tag == "svg" and [o for o in self.open if o[0] == "svg"] == [self.open[-1]]:
            self.svg = None
        if self.open and self.open[-1][0] == tag:
            self.open.pop()
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
        if self.stack and self.stack[-1] == "style":
            self.css += data
            if "@import" in data or "url(" in data:
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
            print(f"{p}: ok ({len(text)} bytes, {c.svgs} charts legible at {WINDOW_PX} px)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
