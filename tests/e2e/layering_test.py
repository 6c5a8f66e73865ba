#!/usr/bin/env python3
"""The core's layering (docs/architecture.md, "The core's areas and what
each may include"): every `#include "loom/AREA/..."` of a header or a
source in core/ names an area its row allows, and every row names only
areas of earlier rows, so the includes form a graph without cycles.  The
table in the docs is the declaration; this test reads it, so the docs and
the code cannot drift apart.  Also: the runtime library's sources are
exactly the runtime areas' sources (so libloom_runtime stays free of IR
code)."""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]loom/([a-z_]+)/', re.M)


def read_table():
    """{area: (library, areas it may include)}, in the table's order."""
    text = (ROOT / "docs/architecture.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`") or cells[2] not in ("runtime", "core", "rpc"):
            continue
        area = cells[0].strip("`")
        rows[area] = (cells[2], set() if cells[3] == "—" else {n.strip() for n in cells[3].split(",")})
    return rows


def main():
    rows = read_table()
    problems = []
    areas_on_disk = {p.name for p in (ROOT / "core/include/loom").iterdir() if p.is_dir()}
    areas_on_disk |= {p.name for p in (ROOT / "core/src").iterdir() if p.is_dir()}
    for missing in sorted(areas_on_disk - set(rows)):
        problems.append(f"core area '{missing}' has no row in docs/architecture.md")
    earlier = set()
    for area, (_, allowed) in rows.items():
        for unknown in sorted(allowed - set(rows)):
            problems.append(f"the row of '{area}' names an unknown area '{unknown}'")
        for later in sorted((allowed & set(rows)) - earlier):
            problems.append(f"the row of '{area}' names '{later}', which is not above it (a cycle)")
        earlier.add(area)
        for kind, folder in (("header", ROOT / "core/include/loom" / area), ("source", ROOT / "core/src" / area)):
            for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
                if path.suffix not in (".h", ".cc"):
                    continue
                # A moved header's old path forwards to its new areas for one
                # minor version (docs/plugins.md, "Migrating plugins").
                if path.read_text().startswith("// Deprecated forwarding header:"):
                    continue
                for number, line in enumerate(path.read_text().splitlines(), 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) != area and m.group(1) not in allowed:
                        problems.append(f"{path.relative_to(ROOT)}:{number}: a {area} {kind} includes "
                                        f"loom/{m.group(1)}/, which its row does not allow")
    # The runtime library holds the runtime areas' sources, and no other.
    cmake = (ROOT / "core/CMakeLists.txt").read_text()
    block = re.search(r"add_library\(loom_runtime SHARED(.*?)\)", cmake, re.S).group(1)
    runtime_areas = {a for a, (lib, _) in rows.items() if lib == "runtime"}
    listed = {line.strip() for line in block.split() if line.strip().startswith("src/")}
    expected = {str(p.relative_to(ROOT / "core")) for a in runtime_areas
                for p in (ROOT / "core/src" / a).glob("*.cc")}
    for extra in sorted(listed - expected):
        problems.append(f"core/CMakeLists.txt: loom_runtime builds {extra}, which is not in a runtime area")
    for missing in sorted(expected - listed):
        problems.append(f"core/CMakeLists.txt: loom_runtime does not build {missing}")
    if problems:
        print("layering: " + str(len(problems)) + " problem(s):\n  " + "\n  ".join(problems))
        return 1
    print(f"layering: {len(rows)} areas, every include allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
