"""The event files of a run folder, as layer_events() reads a folder: every *.jsonl file below it,
subfolders included, in sorted path order; a link to a folder is not followed (links that loop
back would make the walk endless), and a folder or a named pipe called *.jsonl is no event file
(reading a pipe would wait for a writer)."""
import os
from pathlib import Path


def event_files_below(directory, skipped=None):
    """Sorted Paths of the *.jsonl files below directory (none when it is no readable folder).
    A folder below it that cannot be read is left out; with a list as `skipped`, a note saying
    so is added to it, worded as layer_events() words it ("skipped directory 'runs/a/b':
    Permission denied")."""
    def note(error):
        if skipped is not None and os.path.normpath(error.filename) != os.path.normpath(directory):
            skipped.append(f"skipped directory '{error.filename}': {error.strerror or error}")

    found = []
    for folder, _, names in os.walk(directory, onerror=note):  # (os.walk does not follow links to folders)
        found += [Path(folder, name) for name in names
                  if name.endswith(".jsonl") and os.path.isfile(os.path.join(folder, name))]
    return sorted(found)
