"""Reading event files of either format back into records, as json.loads gives JSON Lines.

For Python tools that follow what the hook client writes (the live emulator, tests, benches);
SQL reads the same files with layer_events(). A compact file (_compact_format.py) is decoded
line by line with the definitions and block line before each event, so an event comes back as
the dict its JSON line would be (same keys, same order, same values).
"""
import json
import re

from ._event_format import EVENT_FIELDS, HEADER_RECORD

MAGIC_PREFIX = "#precisionprobe-events "
COMPACT_VERSION = 1
# How many ids a definition may skip (those of damaged definition lines), as layer_events() reads.
MAX_SKIPPED_IDS = 1024
_JOB_FIELDS = ("job_id", "host_name", "ip", "pod", "namespace")
_PROCESS_FIELDS = ("rank", "local_rank", "world_size", "pid")
_NAME_FIELDS = ("job_id", "gpu_uuid", "layer")


class EventFormatError(ValueError):
    """A line that the decoder cannot read (the message says why), or an unknown format."""


class EventDecoder:
    """The records of ONE file, fed its lines in order (without the '\\n').

    decode(line) returns ("header", dict), ("event", dict), ("record", dict) for another record
    type (a mig_device record), or (None, None) for lines that are no record of their own
    (format line, definitions, block lines, blank lines); it raises
    EventFormatError for a malformed line, which leaves the decoder usable for the next one.

    strict=True refuses what layer_events() refuses besides: an event missing a field or with one
    of the wrong type, an empty job_id, gpu_uuid or layer (the event would belong to no job, GPU
    or layer; in the compact format an empty GPU_UUID or NAME on a definition line, an empty
    job_id in the header). The live emulator decodes leniently: it needs only the fields it uses.
    """

    def __init__(self, strict=False):
        self.strict = strict
        self.compact = False
        self._lines = 0
        self._job = None      # the event fields the header gives, in EVENT_FIELDS order
        self._devices = []    # id -> (gpu_uuid, gpu)
        self._layers = []     # id -> (name, type)
        self._block = None    # (base ns, epoch, batch)

    def decode(self, line, utf8=True):
        """utf8=False: the line's bytes are not UTF-8, and `line` holds them decoded with
        "surrogateescape". No record reads from such a line, but in the compact format it may
        still have been a block line, as layer_events() reads it byte by byte."""
        self._lines += 1
        if self._lines == 1 and line.startswith(MAGIC_PREFIX):
            words = line[len(MAGIC_PREFIX):].split()
            if len(words) != 2 or words[0] != "compact" or words[1] != str(COMPACT_VERSION):
                raise EventFormatError(f"event format {' '.join(words)!r} is not one this reader "
                                       f"knows (compact {COMPACT_VERSION})")
            self.compact = True
            return None, None
        # Blanks (and a BOM) alone are no line; before '{' they are JSON, as layer_events() reads them.
        bare = line.lstrip(" \t\r").removeprefix("\ufeff").lstrip(" \t\r")
        if not self.compact:
            if not utf8:
                raise EventFormatError("invalid UTF-8")
            return (None, None) if not line.strip() else self._json(line)
        if not bare:
            return None, None
        if bare[0] == "{":
            if not utf8:
                raise EventFormatError("invalid UTF-8")
            return self._json(line)
        tag = line[0]
        if tag == "@":
            self._block = None
            words = line.split(" ")
            if len(words) != 4 or words[0] != "@":
                raise EventFormatError("a block line is '@ BASE_NS EPOCH BATCH'")
            self._block = (_int(words[1]), _int(words[2]), _int(words[3]))
            return None, None
        if not tag.isdigit():
            # A line that is not an event may have been a block line (a damaged '@'): the
            # events up to the next block line cannot be placed in time.
            block, self._block = self._block, None
            if tag not in "DL":
                raise EventFormatError(f"unknown record type '{_shown_byte(tag)}'")
            self._define(tag, line, block)
            return None, None
        return "event", self._event(line)

    def _json(self, line):
        try:
            record = json.loads(line.removeprefix("\ufeff"))  # (a BOM only as the line's first character)
        except ValueError as error:
            raise EventFormatError(f"invalid JSON ({error})") from None
        if not isinstance(record, dict):
            raise EventFormatError("not a JSON object")
        if self.strict and "\\u" in line and not _all_utf8(record):
            raise EventFormatError("a lone surrogate escape (\\ud800-\\udfff) is no text")
        if record.get("record") == HEADER_RECORD:
            if self.strict and record.get("job_id") == "":
                raise EventFormatError("field 'job_id' is empty")
            if self.compact:
                self._job = record
            return "header", record
        if "record" in record:  # another record type (mig_device, or one a later version adds)
            return "record", record
        if self.strict:
            _check_event(record)
        return "event", record

    def _define(self, tag, line, block):
        """A definition line; once it reads as one, `block` is in force again (a malformed
        line may have been a block line, a definition of an id it may not take cannot)."""
        head, _, rest = line.partition(" ")
        number, _, rest = rest.partition(" ")
        table = self._devices if tag == "D" else self._layers
        values = _json_values(rest) if head == tag else None
        if not values or len(values) != 2 or not _UNSIGNED.fullmatch(number) or int(number) > _INT64_MAX:
            raise EventFormatError(f"a definition line is '{tag} ID ...'")
        ok = (values[0] is None or (type(values[0]) is int and abs(values[0]) <= _INT64_MAX)) \
            and type(values[1]) is str if tag == "D" else all(type(v) is str for v in values)
        if not ok or not all(_utf8(v) for v in values if type(v) is str):
            raise EventFormatError(f"definition {line!r} has values of the wrong type")
        self._block = block
        # An id may skip those of damaged definition lines (their events are then malformed),
        # never so many that one line could grow the table without bound.
        if int(number) > len(table) + MAX_SKIPPED_IDS:
            raise EventFormatError(f"{tag} id {number} skips more than {MAX_SKIPPED_IDS} ids (the "
                                   f"next new one is {len(table)})")
        entry = (values[1], values[0]) if tag == "D" else tuple(values)
        table.extend([None] * (int(number) + 1 - len(table)))
        table[int(number)] = entry

    def _event(self, line):
        words = line.split(" ")
        if len(words) != 4 or len(words[1]) < 2 or words[1][0] not in "fb" \
                or not _UNSIGNED.fullmatch(words[0]) or not _UNSIGNED.fullmatch(words[1][1:]):
            raise EventFormatError("an event line is 'LAYER f|bDEVICE START DURATION'")
        layer, device = _int(words[0]), _int(words[1][1:])
        start, duration = _int(words[2]), _int(words[3])
        if self._job is None:
            raise EventFormatError("an event before the job header")
        if self._block is None:
            raise EventFormatError("an event before any block line")
        if layer >= len(self._layers) or device >= len(self._devices) \
                or self._layers[layer] is None or self._devices[device] is None:
            raise EventFormatError(f"layer {layer} or device {device} is not defined")
        base, epoch, batch = self._block
        job = self._job
        uuid, gpu = self._devices[device]
        name, type_name = self._layers[layer]
        if self.strict and uuid == "":
            raise EventFormatError(f"device id {device} has an empty GPU_UUID")
        if self.strict and name == "":
            raise EventFormatError(f"layer id {layer} has an empty NAME")
        t_start = base + start
        if not -_INT64_MAX - 1 <= t_start <= _INT64_MAX or not -_INT64_MAX - 1 <= t_start + duration <= _INT64_MAX:
            raise EventFormatError("field 't_start_ns' or 't_end_ns' is out of range")
        values = (*(job.get(k) for k in _JOB_FIELDS), uuid, gpu,
                  *(job.get(k) for k in _PROCESS_FIELDS), epoch, batch, name, type_name,
                  words[1][0] == "f", t_start, t_start + duration, job.get("cpu_num"))
        return dict(zip(EVENT_FIELDS, values))


# Each field's JSON type as layer_events() requires it: (accepted Python types, may be null,
# the phrase of its error).
_TEXT, _INTEGER, _NUMBER = (str,), (int,), (int, float)
_FIELD_TYPES = {
    "job_id": (_TEXT, False, "is not text"), "host_name": (_TEXT, True, "is not text or null"),
    "ip": (_TEXT, True, "is not text or null"), "pod": (_TEXT, True, "is not text or null"),
    "namespace": (_TEXT, True, "is not text or null"), "gpu_uuid": (_TEXT, False, "is not text"),
    "gpu": (_INTEGER, True, "is not an integer or null"), "layer": (_TEXT, False, "is not text"),
    "layer_type": (_TEXT, False, "is not text"), "forward": ((bool,), False, "is not true or false"),
    "cpu_num": (_NUMBER, False, "is not a number"),
    **{f: (_INTEGER, False, "is not an integer")
       for f in ("rank", "local_rank", "world_size", "pid", "epoch", "batch", "t_start_ns", "t_end_ns")},
}


def _check_event(record):
    """Raises EventFormatError for an event that layer_events() would skip as malformed."""
    for field in EVENT_FIELDS:
        if field not in record:
            raise EventFormatError(f"missing field '{field}'")
        types, nullable, phrase = _FIELD_TYPES[field]
        value = record[field]
        if value is None and nullable:
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise EventFormatError(f"field '{field}' {phrase}")
    # What names the event's job, GPU and layer: an empty name would attribute it to nothing.
    for field in _NAME_FIELDS:
        if record[field] == "":
            raise EventFormatError(f"field '{field}' is empty")


_scan = json.JSONDecoder().raw_decode


def _json_values(text):
    """The space-separated JSON values of a definition line, or None."""
    values, at = [], 0
    try:
        while at < len(text):
            value, at = _scan(text, at)
            values.append(value)
            if at < len(text):
                if text[at] != " ":
                    return None
                at += 1
    except ValueError:
        return None
    return values


_UNSIGNED = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]+")
_INT64_MAX = 2**63 - 1


def _int(text):
    """A 64-bit integer in ASCII digits, as layer_events() reads one."""
    if not _SIGNED.fullmatch(text) or not -_INT64_MAX - 1 <= int(text) <= _INT64_MAX:
        raise EventFormatError(f"{text!r} is not a 64-bit integer")
    return int(text)


def _shown_byte(char):
    """The first byte of char as layer_events() shows it: itself if printable ASCII, else \\xNN."""
    byte = char.encode("utf-8", "surrogateescape")[0]
    return chr(byte) if 0x20 <= byte < 0x7F else f"\\x{byte:02x}"


def _utf8(text):
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" in JSON)
        return False


def _all_utf8(value):
    """Whether every string in a JSON value encodes as UTF-8, as layer_events() requires."""
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, dict):
        return all(_utf8(key) and _all_utf8(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_all_utf8(item) for item in value)
    return True


def read_event_file(path, skipped=None):
    """(headers, events) of one file of either format, in file order, each event whole (every
    field of EVENT_FIELDS, of its type). A line that layer_events() skips raises EventFormatError
    (naming the file and line), or, given a list `skipped`, is left out and added to it as (line
    number, reason). A last line without its newline is torn (a process killed mid-write): in
    the compact format always, in JSON Lines when it does not parse ("incomplete last line")."""
    headers, events = [], []
    decoder = EventDecoder(strict=True)
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            complete = raw.endswith(b"\n")
            try:
                line, utf8 = raw.decode("utf-8"), True
            except UnicodeDecodeError:  # (the decoder says why the line is malformed)
                line, utf8 = raw.decode("utf-8", "surrogateescape"), False
            try:
                if not complete and decoder.compact:
                    raise EventFormatError("incomplete last line (no newline)")
                kind, record = decoder.decode(line.rstrip("\n"), utf8)
            except EventFormatError as error:
                reason = str(error) if complete or decoder.compact else f"incomplete last line ({error})"
                if skipped is None:
                    raise EventFormatError(f"{path} line {number}: {reason}") from None
                skipped.append((number, reason))
                continue
            if kind == "header":
                headers.append(record)
            elif kind == "event":
                events.append(record)
    return headers, events
