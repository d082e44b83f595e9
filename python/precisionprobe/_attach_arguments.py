"""attach()'s arguments, checked before any hook is installed.

A value the probe cannot use must fail at attach, naming the argument, rather than record a job
no reader can use: a job id that is not text gives a header whose events layer_events skips
(all of them), one of only white space (given, or from $PRECISIONPROBE_JOB_ID) a job every table
shows as a blank row, a clock or summary outside their choices fell silently to another, an event
format that is not text failed with a bare AttributeError, and a flush
interval of 0 or less made the writer thread spin on a whole core for the job's life.
"""
import math
import numbers
import os

from ._event_format import EVENT_FORMATS, chosen_event_format
from ._job_identity import is_blank_job_id, job_id_from_environment

CLOCKS = ("auto", "cpu", "cuda")
SUMMARIES = ("always", "auto", "never")
MAX_FLUSH_INTERVAL_S = 3600.0


def check_out(out):
    """The output folder: a path as text (or a path object giving text), not empty, no NUL byte.
    An empty one was taken as not given, so a job id such as '../x' put the events outside runs/."""
    try:
        path = os.fspath(out)
    except TypeError:
        raise TypeError(f"attach: argument 'out' must be a folder's path as text, got {type(out).__name__} "
                        f"{out!r}") from None
    if not isinstance(path, str):
        raise TypeError(f"attach: argument 'out' must be a folder's path as text, not bytes, got {out!r}")
    if not path:
        raise ValueError("attach: argument 'out' must not be empty (leave it out for runs/<job id>)")
    if "\0" in path:
        raise ValueError(f"attach: argument 'out' must not hold a NUL byte, got {path!r}")


def check_attach_arguments(job_id, clock, flush_interval, summary, out=None, event_format=None):
    """Raises TypeError or ValueError naming the first argument attach() cannot use."""
    if job_id is not None and not isinstance(job_id, str):
        raise TypeError(f"attach: argument 'job_id' must be text, got {type(job_id).__name__} {job_id!r}")
    if job_id is not None and is_blank_job_id(job_id):
        raise ValueError(f"attach: argument 'job_id' must not be empty or only white space (leave it out for the "
                         f"default), got {job_id!r}")
    if out is not None:
        check_out(out)
    from_environment = None
    if job_id is None:
        try:
            from_environment = job_id_from_environment()
        except ValueError as error:
            raise ValueError(f"attach: {error}") from None
    if out is None and (job_id or from_environment):
        # The default out is runs/<job id>: a job id such as '../x' or '/tmp' would put the
        # events outside runs/, or among other jobs' files.
        from ._probe import default_out_dir_problem
        problem = default_out_dir_problem(job_id or from_environment)
        if problem:
            where = "argument 'job_id'" if job_id else "environment variable PRECISIONPROBE_JOB_ID"
            raise ValueError(f"attach: {where}: {(job_id or from_environment)!r}: {problem}; pass out=DIR")
    if clock not in CLOCKS:
        raise ValueError(f"attach: argument 'clock' must be one of {', '.join(CLOCKS)}, got {clock!r}")
    if summary not in SUMMARIES:
        raise ValueError(f"attach: argument 'summary' must be one of {', '.join(SUMMARIES)}, got {summary!r}")
    if (isinstance(flush_interval, bool) or not isinstance(flush_interval, numbers.Real)
            or not math.isfinite(flush_interval) or not 0 < flush_interval <= MAX_FLUSH_INTERVAL_S):
        raise ValueError("attach: argument 'flush_interval' must be a number of seconds above 0 and at most "
                         f"{MAX_FLUSH_INTERVAL_S:g}, got {flush_interval!r}")
    if event_format is not None and not isinstance(event_format, str):
        raise TypeError(f"attach: argument 'event_format' must be text, got {type(event_format).__name__} "
                        f"{event_format!r}")
    if event_format is not None and event_format.strip().lower() not in EVENT_FORMATS:
        raise ValueError(f"attach: argument 'event_format' must be one of {', '.join(EVENT_FORMATS)}, "
                         f"got {event_format!r}")
    if not event_format:
        try:
            chosen_event_format()  # $PRECISIONPROBE_EVENT_FORMAT
        except ValueError as error:
            raise ValueError(f"attach: {error}") from None
