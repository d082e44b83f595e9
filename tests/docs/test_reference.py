"""The reference in docs/ covers the whole SQL surface, and its links lead somewhere.

Every function and table-valued function the extension registers (found by comparing
pragma_function_list and pragma_module_list with and without the extension), every table and
view pp_install_views() creates, and every setting of pp_settings must be listed in
docs/reference/README.md and named on the page it links to; every name listed there must exist;
every relative link of docs/**/*.md must reach a file, and its #anchor a heading of that file;
every yaml block of the docs must parse; the tables getting-started.md shows fit 100 columns.
The outputs of the examples themselves are checked by docs.examples (docs/generate.py --check).

  PP_EXTENSION=build/precisionprobe python3 -m pytest -q tests/docs/test_reference.py
"""
import os
import re
import sqlite3
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
INDEX = DOCS / "reference" / "README.md"
EXTENSION = os.environ.get("PP_EXTENSION", str(ROOT / "build" / "precisionprobe"))
LINK = re.compile(r"\]\(([^)\s]+)\)")  # the target of a markdown link


def connect(extension=True):
    conn = sqlite3.connect(":memory:")
    if extension:
        conn.enable_load_extension(True)
        conn.load_extension(EXTENSION)
    return conn


@pytest.fixture(scope="module")
def surface():
    """name -> kind of everything the extension adds to a connection."""
    base, conn = connect(False), connect()
    names = {}
    for pragma, kind in (("pragma_function_list", "function"), ("pragma_module_list", "table-valued function")):
        before = {r[0] for r in base.execute(f"SELECT name FROM {pragma}")}
        for (name,) in conn.execute(f"SELECT DISTINCT name FROM {pragma}"):
            if name not in before:
                names[name] = kind
    conn.execute("SELECT pp_install_views()")
    for name, kind in conn.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"):
        names[name] = kind
    return names


def index_entries():
    """(names in backticks, link target) per table row of the index."""
    rows = []
    for line in INDEX.read_text().splitlines():
        if not line.startswith("| ["):
            continue
        cell = line.split("|")[1]
        target = LINK.search(cell).group(1)
        names = {re.match(r"[A-Za-z_][A-Za-z0-9_]*", code).group(0) for code in re.findall(r"`([^`]+)`", cell)}
        rows.append((names, target))
    return rows


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_every_object_is_in_the_index_and_on_its_page(surface):
    entries = index_entries()
    listed = {}
    for names, target in entries:
        for name in names:
            listed.setdefault(name, target)
    missing = sorted(name for name in surface if name not in listed)
    assert not missing, f"not in docs/reference/README.md: {missing}"
    for name, target in listed.items():
        page = (INDEX.parent / target.split("#")[0]).resolve()
        assert re.search(rf"\b{re.escape(name)}\b", page.read_text()), f"{name}: not named on {target}"


def test_every_listed_name_exists(surface):
    listed = set().union(*(names for names, _ in index_entries()))
    unknown = sorted(listed - set(surface))
    assert not unknown, f"docs/reference/README.md lists names the extension does not have: {unknown}"


def test_every_setting_is_documented():
    settings = [r[0] for r in connect().execute("SELECT name FROM pp_settings")]
    page, index = (DOCS / "reference" / "settings.md").read_text(), INDEX.read_text()
    assert [s for s in settings if f"| {s} " not in page] == [], "settings.md's generated table is stale"
    assert [s for s in settings if f"`{s}`" not in index] == [], "a setting is missing from the index"


def test_links_reach_files_and_headings():
    broken = []
    for doc in sorted(DOCS.rglob("*.md")):
        text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_getting_started_tables_fit_100_columns():
    text = (DOCS / "getting-started.md").read_text()
    wide = [line for line in text.splitlines() if line[:1] in "┌│├└" and len(line) > 100]
    assert not wide, f"{len(wide)} table lines wider than 100 columns, e.g. {wide[0]!r}"


def test_yaml_blocks_parse():
    yaml = pytest.importorskip("yaml")
    for doc in sorted(DOCS.rglob("*.md")):
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.S):
            assert list(yaml.safe_load_all(block)), f"{doc.relative_to(ROOT)}: empty yaml block"


def test_install_views_names_everything_it_installs(surface):
    text = connect().execute("SELECT pp_install_views()").fetchone()[0]
    named = set(re.findall(r"[a-z_]+", text.split(":", 1)[1]))
    installed = {name for name, kind in surface.items() if kind in ("table", "view")}
    assert installed <= named, f"created but not named: {sorted(installed - named)}"
