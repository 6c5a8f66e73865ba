"""The reference tables of the docs are checked against the registries:
docs/passes.md's pass contracts, pipelines and options, and
docs/operators.md's operators with their attributes and fusion patterns.
A pass or an operator added, removed or changed without its docs fails
here, naming what differs."""
import json
import pathlib
import re
import subprocess

import loom
from loom import op, transform

from conftest import LOOMC, ROOT

DOCS = ROOT / "docs"


def table_rows(text, header):
    """The rows (lists of cells) of the markdown table whose header row
    starts with `header`."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(header):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    raise AssertionError(f"no table starting with {header!r}")


def names(cell):
    return [] if cell in ("—", "-", "") else [n.strip() for n in cell.split(",")]


def passes_json():
    out = subprocess.run([LOOMC, "passes", "list", "--json"], capture_output=True, text=True, check=True).stdout
    return {p["name"]: p for p in json.loads(out)}


def test_the_contract_table_is_the_passes_declarations():
    text = (DOCS / "passes.md").read_text()
    rows = table_rows(text, "| pass | needs | establishes | preserves | changes |")
    listed = passes_json()
    library = {n for n, p in listed.items() if p.get("owner") in ("core", "passes", "loop_passes") and not p.get("passes")}
    documented = {row[0] for row in rows}
    assert documented == library, (f"not in the table: {sorted(library - documented)}; "
                                   f"not passes: {sorted(documented - library)}")
    for name, needs, establishes, preserves, changes in rows:
        info = transform.get_pass(name).info
        assert set(names(needs)) == set(info.needs), (name, "needs", needs, info.needs)
        assert set(names(establishes)) == set(info.establishes), (name, "establishes", establishes, info.establishes)
        assert set(names(preserves)) == set(info.preserves), (name, "preserves", preserves, info.preserves)
        assert set(names("" if changes == "any" else changes)) == set(info.changes), (name, "changes", changes,
                                                                                      info.changes)
    # The properties table names every registered property and its establisher.
    props = {p["name"]: p for p in transform.list_properties()}
    for row in table_rows(text, "| property | level | holds when |"):
        name = row[0].strip("`")
        assert name in props, name
        assert row[1] == (props[name]["level"] or "module"), (name, row[1], props[name]["level"])
        assert row[3] == props[name]["established_by"], (name, row[3])
        assert (row[4] == "yes") == props[name]["auto_establish"], (name, row[4])
        assert row[5].startswith("yes") == props[name]["checked"], (name, row[5])
    assert {r[0].strip("`") for r in table_rows(text, "| property | level | holds when |")} >= \
        {"types_inferred", "ops_lowered", "fused", "buffers_flat", "intrinsics_lowered"}


def test_the_pipelines_table_and_the_options_are_the_registrys():
    text = (DOCS / "passes.md").read_text()
    listed = passes_json()
    for name, cell in table_rows(text, "| name | passes |"):
        name = name.strip("`")
        documented = [re.sub(r"\s*\(opt \d\)", "", p).strip() for p in cell.split(":")[0].split(",")]
        assert documented == listed[name]["passes"], (name, documented, listed[name]["passes"])
    # Every option of a library pass is named in its section.
    for name, p in listed.items():
        if not p.get("options"):
            continue
        section = re.search(r"^### " + name + r"\b(.*?)(?=^##)", text, re.S | re.M)
        assert section, f"docs/passes.md has no section for {name}"
        for option in p["options"]:
            assert f"`{option['name']}`" in section.group(1), (name, option["name"])


def test_the_operator_tables_name_every_operator_with_its_attributes_and_pattern():
    text = (DOCS / "operators.md").read_text()
    registered = {name for name in op.list_ops() if op.info(name)["owner"] == "ops"}  # the library's, not the core's
    documented = {}
    section_pattern = None
    for line in text.splitlines():
        heading = re.match(r"^## .*\(.*pattern: ([a-z_-]+)\)$", line)
        if line.startswith("## "):
            section_pattern = heading.group(1).replace("-", "_") if heading else None
        if not line.startswith("| `"):
            continue
        first, rest = line.split("|")[1], "|".join(line.split("|")[2:])
        for name in re.findall(r"`([a-z_0-9]+)", first):
            documented[name] = (first + "|" + rest, section_pattern)
    assert set(documented) == registered, (f"undocumented: {sorted(registered - set(documented))}; "
                                           f"documented but not registered: {sorted(set(documented) - registered)}")
    previous = ""
    for name, (row, pattern) in documented.items():
        info = op.info(name)
        # A row "as above" (or "as max_pool2d") shares the attributes of that row.
        shared = re.search(r"\bas ([a-z_0-9]+)\b", row)
        also = previous if shared and shared.group(1) == "above" else documented.get(shared.group(1), ("",))[0] if shared else ""
        for attr in info["attrs"]:
            mentioned = [f"`{attr['name']}`", f"{attr['name']}="]
            assert any(m in row or m in also for m in mentioned), (name, attr["name"], row)
        if pattern and "pattern:" not in row:
            assert info["pattern"] == pattern, (name, info["pattern"], pattern)
        previous = row
