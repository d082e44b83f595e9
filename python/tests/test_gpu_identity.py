"""gpu_uuid / gpu: torch's device index mapped to the host's GPU as dcgm-exporter labels it."""
from precisionprobe._gpu_identity import parse_nvidia_smi, resolve_gpu

SMI = """0, GPU-aaaaaaaa-0000-0000-0000-000000000000
1, GPU-bbbbbbbb-0000-0000-0000-000000000000
2, GPU-cccccccc-0000-0000-0000-000000000000
"""
TABLE = parse_nvidia_smi(SMI)


def test_parse_nvidia_smi_csv():
    assert TABLE[2] == "GPU-cccccccc-0000-0000-0000-000000000000"
    assert parse_nvidia_smi("No devices were found\n") == {}


def test_no_remapping():
    assert resolve_gpu(1, None, TABLE) == ("GPU-bbbbbbbb-0000-0000-0000-000000000000", 1)


def test_cuda_visible_devices_by_index():
    assert resolve_gpu(0, "2,0", TABLE) == ("GPU-cccccccc-0000-0000-0000-000000000000", 2)


def test_cuda_visible_devices_by_uuid_prefix():
    assert resolve_gpu(0, "GPU-bbbb", TABLE) == ("GPU-bbbbbbbb-0000-0000-0000-000000000000", 1)


def test_uuid_reported_by_newer_torch():
    uuid, index = resolve_gpu(0, None, TABLE, torch_uuid="cccccccc-0000-0000-0000-000000000000")
    assert (uuid, index) == ("GPU-cccccccc-0000-0000-0000-000000000000", 2)


def test_nothing_known_keeps_the_torch_index():
    assert resolve_gpu(3, None, {}) == (None, 3)


def test_a_uuid_prefix_is_completed_by_torch_without_nvidia_smi():
    """CUDA takes a prefix of a UUID in CUDA_VISIBLE_DEVICES; dcgm-exporter labels the whole UUID,
    so the prefix alone would match no series (and be another name of the GPU than a process
    that found the whole UUID gives it)."""
    whole = "cccccccc-0000-0000-0000-000000000000"
    assert resolve_gpu(0, "GPU-cccc", {}, torch_uuid=whole) == ("GPU-" + whole, None)
    assert resolve_gpu(0, "MIG-cccc", {}, torch_uuid=whole) == ("MIG-" + whole, None)
    # torch's UUID of another device (never CUDA's pick for the prefix) leaves the entry as it is.
    assert resolve_gpu(0, "GPU-dddd", {}, torch_uuid=whole) == ("GPU-dddd", None)
