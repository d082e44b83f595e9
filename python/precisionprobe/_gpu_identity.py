"""The `gpu_uuid` and `gpu` fields: which physical GPU a CUDA device index of this process is.

dcgm-exporter labels series with the GPU UUID ("GPU-5d5b...") and the host's GPU index, which need
not match torch's index when CUDA_VISIBLE_DEVICES remaps devices. Sources, best first:
CUDA_VISIBLE_DEVICES entries (a UUID or a host index), torch's device properties (`uuid` exists
in torch >= 2.0), and one `nvidia-smi` query made when the first CUDA event is written.
On a MIG device the UUID is the MIG device's and the index its parent GPU's; mig_record() gives
the line that says which GPU instance it is (_mig_device.py, through NVML).
"""
import os
import subprocess

from ._event_format import mig_device_record
from ._mig_device import MigDirectory

CPU_UUID = "cpu"


def parse_nvidia_smi(text):
    """Rows of `nvidia-smi --query-gpu=index,uuid --format=csv,noheader` -> {index: uuid}."""
    table = {}
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[0].isdigit():
            table[int(fields[0])] = fields[1]
    return table


def query_nvidia_smi():
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_nvidia_smi(text)


def completed(entry, torch_uuid):
    """A CUDA_VISIBLE_DEVICES UUID entry, which may be a prefix (CUDA accepts one), made whole by
    torch's UUID of the device when that starts with it: dcgm-exporter labels the whole UUID.
    torch writes the UUID without its "GPU-" or "MIG-" prefix."""
    if torch_uuid:
        bare = torch_uuid[4:] if torch_uuid.startswith(("GPU-", "MIG-")) else torch_uuid
        for prefix in ("GPU-", "MIG-"):
            if entry.startswith(prefix) and (prefix + bare).startswith(entry):
                return prefix + bare
    return entry


def resolve_gpu(torch_index, visible_devices=None, smi_table=None, torch_uuid=None):
    """(uuid, host index) of torch's device `torch_index`; either may be None when unknown.

    visible_devices: the CUDA_VISIBLE_DEVICES value; smi_table: parse_nvidia_smi's result;
    torch_uuid: the UUID torch reports, when it does.
    """
    smi_table = smi_table or {}
    host_index = torch_index
    uuid = None
    if visible_devices:
        entries = [e.strip() for e in visible_devices.split(",") if e.strip()]
        if torch_index < len(entries):
            entry = entries[torch_index]
            if entry.isdigit():
                host_index = int(entry)
            else:  # a UUID (possibly abbreviated, as CUDA accepts prefixes)
                host_index = next((i for i, u in smi_table.items() if u.startswith(entry)), None)
                uuid = smi_table.get(host_index, entry) if host_index is not None else completed(entry, torch_uuid)
    if uuid is None and torch_uuid:
        uuid = torch_uuid if torch_uuid.startswith(("GPU-", "MIG-")) else f"GPU-{torch_uuid}"
        host_index = next((i for i, u in smi_table.items() if u == uuid), host_index)
    if uuid is None:
        uuid = smi_table.get(host_index)
    return uuid, host_index


class GpuDirectory:
    """Caches (uuid, host index) per torch device index for the writer thread."""

    def __init__(self, torch_module, mig_directory=None):
        self._torch = torch_module
        self._cache = {}
        self._mig = {}  # torch index -> _mig_device.MigDevice or None
        self._mig_directory = mig_directory or MigDirectory()
        self._smi_table = None

    def lookup(self, torch_index):
        if torch_index not in self._cache:
            if self._smi_table is None:
                self._smi_table = query_nvidia_smi()
            torch_uuid = None
            try:
                torch_uuid = str(getattr(self._torch.cuda.get_device_properties(torch_index), "uuid", "")) or None
            except Exception:  # noqa: BLE001 - old torch or driver trouble: fall back to nvidia-smi
                pass
            uuid, host_index = resolve_gpu(torch_index, os.environ.get("CUDA_VISIBLE_DEVICES"),
                                           self._smi_table, torch_uuid)
            mig = self._mig[torch_index] = self._mig_directory.lookup(uuid) if uuid else None
            if mig is not None:  # the MIG device's UUID (torch's lacks its prefix), its parent's index
                uuid, host_index = mig.mig_uuid, mig.gpu_index
            self._cache[torch_index] = (uuid or f"cuda:{torch_index}", host_index)
        return self._cache[torch_index]

    def mig_record(self, torch_index):
        """The mig_device record line of the device, or None when it is not a MIG device (or NVML
        cannot say): called once per device, after lookup()."""
        self.lookup(torch_index)
        mig = self._mig.get(torch_index)
        if mig is None:
            return None
        return mig_device_record(mig.mig_uuid, mig.gpu_uuid, mig.gpu_instance_id, mig.profile)
