"""The mark an emulator leaves in a folder of event files it rewrote onto emulated GPUs (the live
emulator's --mirror, analyze --emulate's RUN_DIR.emulated/events), so that a command given a
folder holding both the events and such a copy refuses, instead of counting every call twice."""
from pathlib import Path

MARK = ".precisionprobe-emulated"


def mark(folder, source):
    """Leaves the mark in folder: a copy of the events of source."""
    Path(folder, MARK).write_text(f"event files of {source}, rewritten onto emulated GPUs\n")


def copies_inside(folder):
    """The emulated copies below folder (not folder itself) that sit beside other event files."""
    folder = Path(folder)
    copies = [path.parent for path in folder.rglob(MARK) if path.parent != folder]
    if not copies:
        return []
    others = any(not any(copy in event.parents for copy in copies) for event in folder.rglob("*.jsonl"))
    return copies if others else []
