"""Which GPU instance a MIG device is: the mig_device record of the event files (_event_format.py).

A process on a MIG instance sees a MIG device UUID ("MIG-..."), while dcgm-exporter labels the
instance's series with the parent GPU's UUID and GPU_I_ID. NVML knows both; it is read through
ctypes (libnvidia-ml.so.1 comes with the driver, no Python package needed), from the writer
thread, once per device. Nothing here is ever fatal: without NVML, or when a call fails, there is
no record, and pp_refresh says which MIG device it cannot place and what to insert instead.
"""
import ctypes
import re
from dataclasses import dataclass

NVML_LIBRARY = "libnvidia-ml.so.1"
NVML_SUCCESS = 0
UUID_BUFFER = 96   # NVML_DEVICE_UUID_V2_BUFFER_SIZE
NAME_BUFFER = 96   # NVML_DEVICE_NAME_V2_BUFFER_SIZE
PROFILE_IN_NAME = re.compile(r"\bMIG (\d+g\.\d+gb)\b")  # "NVIDIA H100 NVL MIG 1g.12gb"


@dataclass(frozen=True)
class MigDevice:
    mig_uuid: str         # "MIG-...": what the events say
    gpu_uuid: str         # the parent GPU: dcgm-exporter's UUID label
    gpu_instance_id: int  # dcgm-exporter's GPU_I_ID label
    gpu_index: int        # the parent's index on the host: dcgm-exporter's gpu label
    profile: str = None   # "1g.12gb", read off the MIG device's name when it says


def load_nvml():
    """NVML initialised, or None (no driver, a container without it, a CPU-only machine)."""
    try:
        nvml = ctypes.CDLL(NVML_LIBRARY)
        return nvml if nvml.nvmlInit_v2() == NVML_SUCCESS else None
    except (OSError, AttributeError):
        return None


def query_mig_device(nvml, uuid):
    """The MigDevice of `uuid`, asked of nvml (a loaded NVML, or an object with the same functions
    taking ctypes arguments), or None when uuid is a whole GPU, unknown, or a call fails.

    uuid: what the process resolved for its device. torch reports a MIG device's UUID without its
    prefix, and _gpu_identity then writes "GPU-" before it, so "GPU-x" is also tried as "MIG-x"."""
    candidates = [uuid] if uuid.startswith("MIG-") else []
    if uuid.startswith("GPU-"):
        candidates.append("MIG-" + uuid[len("GPU-"):])
    for candidate in candidates:
        device = ctypes.c_void_p()
        if nvml.nvmlDeviceGetHandleByUUID(candidate.encode(), ctypes.byref(device)) != NVML_SUCCESS:
            continue
        is_mig = ctypes.c_uint(0)
        if nvml.nvmlDeviceIsMigDeviceHandle(device, ctypes.byref(is_mig)) != NVML_SUCCESS or not is_mig.value:
            return None
        instance, parent, index = ctypes.c_uint(0), ctypes.c_void_p(), ctypes.c_uint(0)
        parent_uuid = ctypes.create_string_buffer(UUID_BUFFER)
        if (nvml.nvmlDeviceGetGpuInstanceId(device, ctypes.byref(instance)) != NVML_SUCCESS
                or nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(device, ctypes.byref(parent)) != NVML_SUCCESS
                or nvml.nvmlDeviceGetUUID(parent, parent_uuid, UUID_BUFFER) != NVML_SUCCESS
                or nvml.nvmlDeviceGetIndex(parent, ctypes.byref(index)) != NVML_SUCCESS):
            return None
        name = ctypes.create_string_buffer(NAME_BUFFER)
        profile = None
        if nvml.nvmlDeviceGetName(device, name, NAME_BUFFER) == NVML_SUCCESS:
            match = PROFILE_IN_NAME.search(name.value.decode(errors="replace"))
            profile = match.group(1) if match else None
        return MigDevice(candidate, parent_uuid.value.decode(), int(instance.value), int(index.value), profile)
    return None


class MigDirectory:
    """query_mig_device() per UUID, once, with NVML loaded on first use (load: for tests)."""

    def __init__(self, load=load_nvml):
        self._load = load
        self._nvml = None
        self._loaded = False
        self._cache = {}

    def lookup(self, uuid):
        if uuid not in self._cache:
            result = None
            try:
                if not self._loaded:
                    self._loaded = True
                    self._nvml = self._load()
                if self._nvml is not None and uuid:
                    result = query_mig_device(self._nvml, uuid)
            except Exception:  # noqa: BLE001 - a broken driver must not stop training
                result = None
            self._cache[uuid] = result
        return self._cache[uuid]
