"""The JSON Lines format: one event per line with exactly EVENT_FIELDS, plus one job header line.

Event line (keys in this order, nothing else):
  {"job_id":"j1","host_name":"node3","ip":"10.0.0.7","pod":"dlrm-0","namespace":"ml",
   "gpu_uuid":"GPU-5d5b...","gpu":0,"rank":0,"local_rank":0,"world_size":1,"pid":4242,
   "epoch":0,"batch":12,"layer":"top_l.2","layer_type":"Linear","forward":true,
   "t_start_ns":1714000000123456789,"t_end_ns":1714000000123556789,"cpu_num":8.0}

Header line: the first line of each file, once per process, told apart by "record": "job" and by
having no "layer" key. See job_header() for its keys.

MIG device record: before the first event on a device that is a MIG instance, once per device
(mig_device_record()), which GPU instance of which GPU the events' "MIG-..." gpu_uuid is:
  {"record":"mig_device","mig_uuid":"MIG-1c2d...","gpu_uuid":"GPU-153b...","gpu_instance_id":7,
   "profile":"1g.12gb"}
dcgm-exporter labels a GPU instance's series with the parent's UUID and GPU_I_ID; pp_refresh
keeps these records in pp_mig_devices to find them.

FORMAT_VERSION (the header's "format_version") counts changes to what a file may hold. Readers
read every version up to their own: fields and record types are only ever added, an event line
keeps exactly EVENT_FIELDS, and a reader ignores fields it does not know. A record type a reader
does not know is a line it skips as malformed (counted in a warning), never a reason to stop.
  1  events and the job header
  2  the mig_device record

This is one of the two encodings the probe writes (chosen_event_format(); the other, the default,
is _compact_format.py): JSON Lines is what jq and other JSON tools read directly.

Lines are built by string concatenation from fragments computed once (per process, per device, per
module), which is what keeps the writer thread cheap; json.dumps escapes every string it pastes.
"""
import json
import os
import re
import sys

EVENT_FIELDS = (
    "job_id", "host_name", "ip", "pod", "namespace", "gpu_uuid", "gpu", "rank", "local_rank",
    "world_size", "pid", "epoch", "batch", "layer", "layer_type", "forward", "t_start_ns",
    "t_end_ns", "cpu_num",
)
HEADER_RECORD = "job"
MIG_DEVICE_RECORD = "mig_device"
FORMAT_VERSION = 2


def valid_text(text):
    """text that encodes as UTF-8: a lone surrogate (what Python makes of a byte of a command-line
    argument, variable or file name that is not UTF-8) becomes \\xe9 for the byte, \\ud800
    otherwise. json.dumps would write it as the escape "\\udce9", which is no text: layer_events
    and every JSON reader that checks refuse the line, and a refused header takes all the
    compact file's events with it."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def mig_device_record(mig_uuid, gpu_uuid, gpu_instance_id, profile=None):
    """The line saying which GPU instance (parent UUID, GPU_I_ID) a MIG device UUID is."""
    return json.dumps({"record": MIG_DEVICE_RECORD, "mig_uuid": mig_uuid, "gpu_uuid": gpu_uuid,
                       "gpu_instance_id": int(gpu_instance_id), "profile": profile},
                      separators=(",", ":")) + "\n"

# PRECISIONPROBE_EVENT_FORMAT (or attach(event_format=...)): which encoding new files get.
ENV_EVENT_FORMAT = "PRECISIONPROBE_EVENT_FORMAT"
EVENT_FORMATS = ("compact", "json")
DEFAULT_EVENT_FORMAT = "compact"


def chosen_event_format(value=None, environ=None):
    """The event format: `value` if given, else $PRECISIONPROBE_EVENT_FORMAT, else compact.
    ValueError, naming where the value came from, for one that is not a format."""
    given = value or (os.environ if environ is None else environ).get(ENV_EVENT_FORMAT) or DEFAULT_EVENT_FORMAT
    chosen = given.strip().lower()
    if chosen not in EVENT_FORMATS:
        if value:
            raise ValueError(f"event format {given!r} is not one of {', '.join(EVENT_FORMATS)}")
        raise ValueError(f"environment variable {ENV_EVENT_FORMAT} is {given!r}, not one of "
                         f"{', '.join(EVENT_FORMATS)} (unset it for the default, {DEFAULT_EVENT_FORMAT})")
    return chosen


class EventFormatter:
    """Formats event tuples; gpu_lookup(torch_index) -> (uuid, host index) for CUDA devices;
    mig_lookup(torch_index) -> a mig_device_record() line, or None, called once per device with
    gpu_lookup: the first event line of a MIG device comes after its record."""

    def __init__(self, identity, gpu_lookup=None, mig_lookup=None):
        self._identity = identity
        self._gpu_lookup = gpu_lookup
        self._mig_lookup = mig_lookup
        self._prefixes = {None: self._prefix("cpu", None)}
        self._suffix = f',"cpu_num":{json.dumps(float(identity.cpu_num))}}}\n'

    def use_identity(self, identity):
        """The identity for the events to come (set before the first: the probe's header)."""
        self._identity = identity
        self._prefixes = {None: self._prefix("cpu", None)}

    def _prefix(self, gpu_uuid, gpu):
        i = self._identity
        head = json.dumps({"job_id": i.job_id, "host_name": i.host_name, "ip": i.ip, "pod": i.pod,
                           "namespace": i.namespace, "gpu_uuid": gpu_uuid, "gpu": gpu,
                           "rank": i.rank, "local_rank": i.local_rank,
                           "world_size": i.world_size, "pid": i.pid}, separators=(",", ":"))
        return head[:-1] + ","  # keep the object open for the per-event fields

    def new_block(self):
        """Nothing to do: every JSON line stands alone (the compact formatter restates its time
        base here)."""

    def file_start(self, header, restart):
        """What a newly opened file starts with: nothing, or after a removed file the header."""
        return header if restart else ""

    def line(self, info, forward, batch, epoch, t_start_ns, t_end_ns, device):
        prefix = self._prefixes.get(device)
        if prefix is None:
            uuid, gpu = self._gpu_lookup(device)
            prefix = self._prefixes[device] = self._prefix(uuid, gpu)
            record = self._mig_lookup(device) if self._mig_lookup else None
            if record:
                return record + self.line(info, forward, batch, epoch, t_start_ns, t_end_ns, device)
        return (f'{prefix}"epoch":{epoch},"batch":{batch},{info.fragment}'
                f'"forward":{"true" if forward else "false"},'
                f'"t_start_ns":{t_start_ns},"t_end_ns":{t_end_ns}{self._suffix}')


# Last parts of an option's or variable's name that say its value is a credential (split at -, _
# and .): --hf-token, --api-key, AWS_SECRET_ACCESS_KEY, GITHUB_PAT; not --pad_token_id.
_SECRET_NAME_ENDS = {"token", "secret", "password", "passwd", "pwd", "key", "apikey", "auth", "credential",
                     "credentials", "cookie", "pat"}
# A URL's password: everything between "user:" and the last "@" before the host.
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):\S*@([^@/\s?#]*(?:[/?#]|$))")
# A credential in an HTTP header's words: "Authorization: Bearer X", "Bearer X", "Basic X".
_HEADER_CREDENTIAL = re.compile(r"(?i)\b((?:authorization|proxy-authorization|cookie|x-api-key)\s*:\s*)"
                                r"(?:(bearer|basic|token)\s+)?\S+|\b(bearer|basic)\s+\S+")


_OPTION_NAME = re.compile(r"-{0,2}[A-Za-z_][A-Za-z0-9_.-]*")


def _names_secret(name):
    parts = [p for p in re.split(r"[-_.]+", name.lower().lstrip("-")) if p]
    return bool(parts) and parts[-1] in _SECRET_NAME_ENDS


def _hide_in_text(text):
    """NAME=VALUE pairs (also nested: --set=api_key=X), header credentials and URL passwords."""
    name, equals, value = text.partition("=")
    if equals and _OPTION_NAME.fullmatch(name):
        return name + "=" + ("***" if _names_secret(name) else _hide_in_text(value))
    text = _HEADER_CREDENTIAL.sub(lambda m: (m.group(1) + (m.group(2) + " " if m.group(2) else "") + "***")
                                  if m.group(1) else m.group(3) + " ***", text)
    return _URL_PASSWORD.sub(r"\1:***@\2", text)


def hide_command_secrets(command):
    """The command line with credentials replaced by ***, as event files are shared: the value of
    an option or variable whose name ends with a credential's (--hf-token=X, --api-key X,
    AWS_SECRET_ACCESS_KEY=X), header credentials (Bearer X) and URL passwords (https://user:X@host)."""
    hidden, after_secret_flag = [], False
    for arg in map(str, command):
        if after_secret_flag and not arg.startswith("-"):
            hidden.append("***")  # --token VALUE: the value
            after_secret_flag = False
            continue
        after_secret_flag = arg.startswith("-") and "=" not in arg and _names_secret(arg)
        hidden.append(_hide_in_text(arg))
    return hidden


def job_header(identity, *, command, torch_version, start_time_ns, parameters, model, clock,
               package_version):
    """The job-level record: what ran, where, and how big the model is."""
    record = {
        "record": HEADER_RECORD,
        "format_version": FORMAT_VERSION,
        "job_id": identity.job_id,
        "host_name": identity.host_name,
        "ip": identity.ip,
        "pod": identity.pod,
        "namespace": identity.namespace,
        "rank": identity.rank,
        "local_rank": identity.local_rank,
        "world_size": identity.world_size,
        "pid": identity.pid,
        "cpu_num": float(identity.cpu_num),
        "command": [valid_text(arg) for arg in hide_command_secrets(command)],
        "python_version": sys.version.split()[0],
        "torch_version": torch_version,
        "precisionprobe_version": package_version,
        "start_time_ns": start_time_ns,
        "model": model,            # class name of the first top-level module called
        "parameters": parameters,  # its parameter count (numel summed)
        "clock": clock,            # "cpu": time.time_ns() at hooks; "cuda": CUDA events
    }
    return json.dumps(record, separators=(",", ":")) + "\n"
