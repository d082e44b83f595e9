"""The mark an emulator leaves in a folder of event files it rewrote onto emulated GPUs (the live
emulator's --mirror, analyze --emulate's RUN_DIR.emulated/events), so that a command given a
folder holding both the events and such a copy refuses, instead of counting every call twice."""
from pathlib import Path

MARK = ".precisionprobe-emulated"


def mark(folder, source):
    """Leaves the mark in folder: a copy of the event files of source (its first line names it)."""
    Path(folder, MARK).write_text(f"{Path(source).resolve()}\nevent files of that folder, rewritten onto emulated GPUs\n")


def _source(mark_file):
    try:
        return Path(mark_file.read_text().splitlines()[0]).resolve()
    except (OSError, IndexError, ValueError):
        return None  # (an unreadable mark: taken as a copy of anything)


def is_copy(folder):
    """Whether folder is an emulated copy, or holds one (a marked folder at or below it)."""
    return Path(folder, MARK).is_file() or any(Path(folder).rglob(MARK))


def copies_inside(folder):
    """The emulated copies below folder (not folder itself) whose events are below it too, or
    that sit beside other event files there where the mark does not say its source."""
    folder = Path(folder).resolve()
    copies = []
    for mark_file in folder.rglob(MARK):
        copy = mark_file.parent
        if copy == folder:
            continue
        source = _source(mark_file)
        if source is None:
            if any(copy not in event.parents for event in folder.rglob("*.jsonl")):
                copies.append(copy)
        elif (source == folder or folder in source.parents) and any(source.rglob("*.jsonl")):
            copies.append(copy)
    return copies
