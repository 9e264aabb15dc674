#!/usr/bin/env python3
"""The library's structure drawn from its imports: rooms (modules), floors (layers) and arrows.

Reads the Rust files under SRC (default: src/ of this repository) and writes markdown with a
mermaid drawing to stdout. A room is a top-level module of src/ or, with --areas, a module of an
area folder (src/environment/sim -> environment::sim); the binary (main.rs, cli/) is one room,
`cli`. An arrow A -> B is one or more imports of B in A's files (`crate::B` in the library,
`empathy_gym::B` in the binary). A room's floor is one above the highest floor it imports, so
floor 0 imports nothing of the library. With --crate-area, that area folder is a crate of its own
which the library re-exports under the area's name: inside it `crate::B` is `area::B`, except for
its modules the library re-exports at its top (model, openai), which keep their own names. The
layer test (tests/integration/layers.rs) checks that arrows only point down; this draws them.

    python3 scripts/structure.py [--src DIR] [--areas environment,learning]
        [--crate-area environment] [--title TEXT]
"""

import argparse
import re
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def code(text):
    """The file's lines with line comments dropped."""
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def names_after(text, prefix):
    """The first names after `prefix`: `p::a::b` -> a, `p::{a::b, c}` -> a, c."""
    out = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_:$])" + re.escape(prefix), text):
        rest = text[m.end():]
        if rest.startswith("{"):
            group = rest[1:rest.find("}")] if "}" in rest else ""
            for part in group.split(","):
                n = re.match(IDENT, part.strip())
                if n:
                    out.add(n.group(0))
        else:
            n = re.match(IDENT, rest)
            if n:
                out.add(n.group(0))
    return out


# The crate area's modules that the library re-exports at its top (`crate::model`).
REEXPORTED = {"error", "seed", "model", "openai"}


def room_of(rel, areas, crate_area):
    parts = [p[:-3] if p.endswith(".rs") else p for p in rel.parts]
    if parts[0] in ("main", "cli"):
        return "cli"
    if parts[0] == crate_area and len(parts) > 1 and parts[1] in REEXPORTED:
        return parts[1]
    if parts[0] in areas and len(parts) > 1 and parts[1] not in ("mod", "lib"):
        return f"{parts[0]}::{parts[1]}"
    return parts[0]


def targets(text, prefix, areas, in_crate_area=None):
    out = set()
    for n in names_after(text, prefix):
        if in_crate_area and n not in REEXPORTED:
            out.add(f"{in_crate_area}::{n}" if in_crate_area in areas else in_crate_area)
        elif n in areas:
            inner = names_after(text, f"{prefix}{n}::")
            out |= {f"{n}::{m}" for m in inner} or {n}
        else:
            out.add(n)
    return out


def graph(src, areas, crate_area):
    edges = {}
    for f in sorted(src.rglob("*.rs")):
        rel = f.relative_to(src)
        room = room_of(rel, areas, crate_area)
        if room in ("lib",) or room in areas:
            continue
        text = code(f.read_text())
        prefix = "empathy_gym::" if room == "cli" else "crate::"
        inside = crate_area if rel.parts[0] == crate_area else None
        found = targets(text, prefix, areas, inside)
        edges.setdefault(room, set()).update(t for t in found if t != room)
    # Names that are not rooms (re-exports such as `Error`, `Result`) are dropped.
    rooms = set(edges)
    return {r: {t for t in ts if t in rooms} for r, ts in edges.items()}


def floors(edges):
    memo = {}

    def floor(r, seen=()):
        if r in memo:
            return memo[r]
        if r in seen:
            raise SystemExit(f"a circle through {r}")
        f = 1 + max((floor(t, seen + (r,)) for t in edges[r]), default=-1)
        memo[r] = f
        return f

    for r in edges:
        floor(r)
    return memo


def mermaid_id(name):
    return name.replace("::", "_")


def render(edges, title):
    fl = floors(edges)
    arrows = sum(len(t) for t in edges.values())
    top = max(fl.values())
    lines = [
        f"### {title}",
        "",
        f"{len(edges)} rooms on {top + 1} floors, {arrows} arrows (floor 0 imports nothing of the "
        "library; every arrow points to a lower floor).",
        "",
        "```mermaid",
        "flowchart BT",
    ]
    for f in range(top + 1):
        members = sorted(r for r in edges if fl[r] == f)
        lines.append(f'  subgraph floor{f}["floor {f}"]')
        lines += [f'    {mermaid_id(r)}["{r}"]' for r in members]
        lines.append("  end")
    for r in sorted(edges):
        for t in sorted(edges[r]):
            lines.append(f"  {mermaid_id(r)} --> {mermaid_id(t)}")
    lines += ["```", ""]
    lines.append("| floor | rooms |")
    lines.append("|---:|---|")
    for f in range(top, -1, -1):
        members = sorted(r for r in edges if fl[r] == f)
        lines.append(f"| {f} | {', '.join('`' + m + '`' for m in members)} |")
    lines.append("")
    return "\n".join(lines)


def main():
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=here / "src")
    ap.add_argument("--areas", default="", help="area folders, comma-separated")
    ap.add_argument("--crate-area", default=None, help="the area folder that is a crate of its own")
    ap.add_argument("--title", default="The library's structure")
    a = ap.parse_args()
    areas = {x for x in a.areas.split(",") if x}
    print(render(graph(a.src, areas, a.crate_area), a.title))


if __name__ == "__main__":
    main()
