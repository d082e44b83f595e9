"""The compact event encoding: what a JSON event line repeats, written once per file.

docs/reference/layer_events.md ("The compact format") is the specification; in short, one record
per line, every line ending in '\\n':

  #precisionprobe-events compact 1            line 1: the format and its version
  {"record":"job","job_id":"j1",...}          the job header, the same JSON line as in JSON Lines
  {"record":"mig_device",...}                 before a MIG device's D line: its GPU instance
  D 0 0 "GPU-5d5b..."                         device 0: host gpu index (null on CPU), gpu_uuid
  L 3 "top_l.2" "Linear"                      layer 3: name and type, as JSON strings
  @ 1714000000123456789 0 12                  block: base time (unix ns), epoch, batch
  3 f0 1523401 48211                          event: layer, f/b and device, t_start - base,
                                              t_end - t_start (signed decimal ns)

An event line depends only on the definitions before it and on the nearest block line before it:
a block line starts every write (so a reader resuming at a line boundary needs the definitions
and that block line, which pp_refresh records) and every change of epoch or batch.

The job fields of an event (job_id .. pid, cpu_num) are the header's, so the header must be
queued before the first event (the probe does so).
"""
import json

MAGIC = "#precisionprobe-events compact 1\n"


class CompactFormatter:
    """Formats event tuples as compact lines; gpu_lookup(torch_index) -> (uuid, host index);
    mig_lookup(torch_index) -> a mig_device_record() line (JSON, as in JSON Lines), or None,
    called once per device: a MIG device's record comes before its D line."""

    def __init__(self, identity, gpu_lookup=None, mig_lookup=None):
        self._gpu_lookup = gpu_lookup
        self._mig_lookup = mig_lookup
        self._layers = {}   # ModuleInfo.fragment (one per name and type) -> layer id
        self._devices = {}  # torch device index or None -> ("b<id>", "f<id>"), indexed by forward
        self._definitions = []  # every D and L line so far, for a file started after a removal
        self._base = None   # the block's base time; None: the next event starts a block
        self._epoch = self._batch = None

    def use_identity(self, identity):
        """Nothing to do: an event's job fields are the header's."""

    def new_block(self):
        """The next event starts a block line (the writer calls this before each write)."""
        self._base = None

    def file_start(self, header, restart):
        """What a newly opened file starts with. After a removed file (restart), the new file
        gets the header and every definition again: the events to come refer to them."""
        if not restart:
            return MAGIC
        return MAGIC + (header or "") + "".join(self._definitions)

    def line(self, info, forward, batch, epoch, t_start_ns, t_end_ns, device):
        head = ""
        layer = self._layers.get(info.fragment)
        if layer is None:
            layer = self._layers[info.fragment] = len(self._layers)
            head = f"L {layer} {json.dumps(info.name)} {json.dumps(info.type_name)}\n"
            self._definitions.append(head)
        tags = self._devices.get(device)
        if tags is None:
            head += self._define_device(device)
            tags = self._devices[device]
        base = self._base
        if base is None or batch != self._batch or epoch != self._epoch:
            base = self._base = t_start_ns
            self._epoch, self._batch = epoch, batch
            head += f"@ {base} {epoch} {batch}\n"
        return f"{head}{layer} {tags[forward]} {t_start_ns - base} {t_end_ns - t_start_ns}\n"

    def _define_device(self, device):
        number = len(self._devices)
        uuid, gpu = ("cpu", None) if device is None else self._gpu_lookup(device)
        self._devices[device] = (f"b{number}", f"f{number}")
        record = self._mig_lookup(device) if self._mig_lookup and device is not None else None
        text = (record or "") + f"D {number} {json.dumps(gpu)} {json.dumps(uuid)}\n"
        self._definitions.append(text)
        return text
