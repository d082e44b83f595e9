"""The mark an emulator leaves in a folder of event files it rewrote onto emulated GPUs (the live
emulator's --mirror, analyze --emulate's RUN_DIR.emulated/events), so that a command given a
folder holding both the events and such a copy refuses, instead of counting every call twice.

The mark names its source twice: by its absolute path (first line), and relative to the copy
(a line "relative: PATH"), so that the pair is still recognised after the folder holding both
was moved or copied elsewhere."""
import os
from pathlib import Path

MARK = ".precisionprobe-emulated"
_RELATIVE = "relative: "
_PROFILE = "profile: "


def mark(folder, source, profile):
    """Leaves the mark in folder: a copy of the event files of source (its first line names it),
    whose counters are the emulator's, from profile (a shipped profile's name, or a file's path)."""
    source = Path(source).resolve()
    relative = os.path.relpath(source, Path(folder).resolve())
    Path(folder, MARK).write_text(f"{source}\nevent files of that folder, rewritten onto emulated GPUs\n"
                                  f"{_RELATIVE}{relative}\n{_PROFILE}{profile}\n")


def profile_of(copy):
    """The profile an emulated copy's counters come from, as its mark names it ('' where the mark
    names none: an earlier version's, or one that cannot be read)."""
    try:
        lines = Path(copy, MARK).read_text().splitlines()
    except (OSError, ValueError):
        return ""
    return next((line[len(_PROFILE):] for line in lines if line.startswith(_PROFILE)), "")


def copy_holding(path):
    """The emulated copy (a marked folder) that path lies in, or None."""
    return next((at for at in Path(path).parents if Path(at, MARK).is_file()), None)


def _sources(mark_file):
    """The folders the mark names as its source (where they exist), or None for a mark that
    cannot be read."""
    try:
        lines = mark_file.read_text().splitlines()
        named = [Path(lines[0])] + [mark_file.parent / line[len(_RELATIVE):] for line in lines[1:]
                                    if line.startswith(_RELATIVE)]
        return [path.resolve() for path in named if path.is_dir()]
    except (OSError, IndexError, ValueError):
        return None  # (an unreadable mark: taken as a copy of anything)


def sources_of(copy):
    """The source folders the mark of copy names that exist ([] where none does, or the mark
    cannot be read)."""
    return _sources(Path(copy, MARK)) or []


def names_another_source(copy, folder):
    """Whether copy is an emulated copy whose mark names a source folder that exists and is not
    folder (a copy whose source is gone, or whose mark cannot be read, names none)."""
    sources = sources_of(copy) if Path(copy, MARK).is_file() else []
    return bool(sources) and Path(folder).resolve() not in sources


def is_copy(folder):
    """Whether folder is an emulated copy, or holds one (a marked folder at or below it)."""
    return Path(folder, MARK).is_file() or any(Path(folder).rglob(MARK))


def places_its_source(copy):
    """Whether the mark of copy (an emulated copy) names a source folder that exists."""
    return bool(_sources(Path(copy, MARK)))


def copies_inside(folder):
    """The emulated copies below folder (not folder itself) whose events are below it too, or
    that sit beside other event files there where the mark does not say where its source is now
    (an unreadable mark, or one whose source is gone)."""
    folder = Path(folder).resolve()
    copies = []
    for mark_file in folder.rglob(MARK):
        copy = mark_file.parent
        if copy == folder:
            continue
        sources = _sources(mark_file)
        if not sources:
            if any(copy not in event.parents for event in folder.rglob("*.jsonl")):
                copies.append(copy)
        elif any((source == folder or folder in source.parents) and any(source.rglob("*.jsonl"))
                 for source in sources):
            copies.append(copy)
    return copies
