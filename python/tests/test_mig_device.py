"""The mig_device record: which GPU instance a MIG device is, from NVML, written before the device's
first event. There is no GPU on the test machines, so NVML here is FakeNvml: an object with NVML's
functions that answers through the same ctypes arguments libnvidia-ml.so.1 would get."""
import ctypes
import json
from types import SimpleNamespace

from precisionprobe._event_format import EventFormatter
from precisionprobe._gpu_identity import GpuDirectory
from precisionprobe._mig_device import NVML_SUCCESS, MigDirectory, load_nvml, query_mig_device

PARENT = "GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa"
MIG = "MIG-1c2d3e4f-5a6b-5c7d-8e9f-0a1b2c3d4e5f"
NOT_FOUND = 6  # NVML_ERROR_NOT_FOUND


class FakeNvml:
    """One H100 NVL in MIG mode at host index 2 with GPU instance 7 (1g.12gb) as MIG device MIG;
    handles are small integers. `fail` names a function that returns an error."""

    def __init__(self, fail=None):
        self.fail = fail
        self.calls = []
        self.handles = {PARENT: 1, MIG: 2}

    def __getattr__(self, name):
        def call(*args):
            self.calls.append(name)
            if name == self.fail:
                return 999  # NVML_ERROR_UNKNOWN
            return getattr(self, "_" + name)(*args)
        return call

    @staticmethod
    def _set(ref, value):
        ref._obj.value = value

    def _nvmlDeviceGetHandleByUUID(self, uuid, ref):
        if uuid.decode() not in self.handles:
            return NOT_FOUND
        self._set(ref, self.handles[uuid.decode()])
        return NVML_SUCCESS

    def _nvmlDeviceIsMigDeviceHandle(self, handle, ref):
        self._set(ref, 1 if handle.value == 2 else 0)
        return NVML_SUCCESS

    def _nvmlDeviceGetGpuInstanceId(self, handle, ref):
        self._set(ref, 7)
        return NVML_SUCCESS

    def _nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, handle, ref):
        self._set(ref, 1)
        return NVML_SUCCESS

    def _nvmlDeviceGetUUID(self, handle, buffer, size):
        assert handle.value == 1 and size >= len(PARENT) + 1
        buffer.value = PARENT.encode()
        return NVML_SUCCESS

    def _nvmlDeviceGetIndex(self, handle, ref):
        self._set(ref, 2)
        return NVML_SUCCESS

    def _nvmlDeviceGetName(self, handle, buffer, size):
        buffer.value = b"NVIDIA H100 NVL MIG 1g.12gb"
        return NVML_SUCCESS


def test_a_mig_device_is_its_parent_gpu_and_gpu_instance():
    device = query_mig_device(FakeNvml(), MIG)
    assert (device.mig_uuid, device.gpu_uuid, device.gpu_instance_id, device.gpu_index, device.profile) == \
        (MIG, PARENT, 7, 2, "1g.12gb")


def test_torch_s_unprefixed_mig_uuid_is_found_as_the_mig_device():
    """torch reports the MIG UUID without its prefix and _gpu_identity makes it "GPU-...": NVML
    knows no such GPU, but knows the MIG device."""
    device = query_mig_device(FakeNvml(), "GPU-" + MIG[len("MIG-"):])
    assert device.mig_uuid == MIG and device.gpu_instance_id == 7


def test_a_whole_gpu_or_an_unknown_uuid_is_no_mig_device():
    assert query_mig_device(FakeNvml(), PARENT) is None
    assert query_mig_device(FakeNvml(), "MIG-00000000-0000-0000-0000-000000000000") is None
    assert query_mig_device(FakeNvml(), "cuda:0") is None


def test_a_failing_call_gives_no_record_and_a_missing_name_no_profile():
    for function in ("nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
                     "nvmlDeviceGetUUID", "nvmlDeviceIsMigDeviceHandle"):
        assert query_mig_device(FakeNvml(fail=function), MIG) is None, function
    assert query_mig_device(FakeNvml(fail="nvmlDeviceGetName"), MIG).profile is None


def test_nvml_is_loaded_once_and_each_uuid_asked_once_and_errors_are_never_fatal():
    loads, nvml = [], FakeNvml()
    directory = MigDirectory(load=lambda: loads.append(1) or nvml)
    assert directory.lookup(MIG).gpu_instance_id == 7
    assert directory.lookup(MIG).gpu_instance_id == 7
    assert directory.lookup(PARENT) is None
    assert len(loads) == 1 and nvml.calls.count("nvmlDeviceGetHandleByUUID") == 2

    def broken():
        raise RuntimeError("driver/library version mismatch")
    assert MigDirectory(load=broken).lookup(MIG) is None
    assert MigDirectory(load=lambda: None).lookup(MIG) is None  # no NVML: no record


def test_load_nvml_without_a_driver_is_none_not_an_error():
    # This machine has no NVIDIA driver; where one is installed, this is an initialised library.
    nvml = load_nvml()
    assert nvml is None or isinstance(nvml, ctypes.CDLL)


class FakeTorch:
    """torch.cuda with one device whose properties report the MIG UUID without its prefix."""
    cuda = SimpleNamespace(get_device_properties=lambda index: SimpleNamespace(uuid=MIG[len("MIG-"):]))


def test_the_record_comes_once_before_the_first_event_of_the_mig_device(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr("precisionprobe._gpu_identity.query_nvidia_smi", lambda: {})
    directory = GpuDirectory(FakeTorch(), MigDirectory(load=FakeNvml))
    identity = SimpleNamespace(job_id="j1", host_name="node", ip=None, pod=None, namespace=None, rank=0,
                               local_rank=0, world_size=1, pid=42, cpu_num=4.0)
    formatter = EventFormatter(identity, directory.lookup, directory.mig_record)
    info = SimpleNamespace(fragment='"layer":"fc","layer_type":"Linear",')
    text = formatter.line(info, True, 0, 0, 10, 20, 0) + formatter.line(info, False, 0, 0, 30, 40, 0)
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 3
    assert lines[0] == {"record": "mig_device", "mig_uuid": MIG, "gpu_uuid": PARENT, "gpu_instance_id": 7,
                        "profile": "1g.12gb"}
    assert [(e["gpu_uuid"], e["gpu"]) for e in lines[1:]] == [(MIG, 2), (MIG, 2)]


def test_a_whole_gpu_gets_no_record(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", PARENT)
    monkeypatch.setattr("precisionprobe._gpu_identity.query_nvidia_smi", lambda: {2: PARENT})
    directory = GpuDirectory(SimpleNamespace(cuda=None), MigDirectory(load=FakeNvml))
    assert directory.lookup(0) == (PARENT, 2) and directory.mig_record(0) is None
