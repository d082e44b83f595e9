"""cpu_num: the smaller of the affinity mask and the cgroup CFS quota."""
import os

import pytest

from precisionprobe._cpu_quota import cgroup_cpu_quota, usable_cpu_count


def cgroup_tree(tmp_path, proc_line, files):
    """A fake /proc/self/cgroup and /sys/fs/cgroup: files maps relative paths to contents."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    proc = tmp_path / "cgroup"
    proc.write_text(proc_line + "\n")
    root = tmp_path / "sys-fs-cgroup"
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content + "\n")
    return str(proc), str(root)


def test_v2_quota_of_one_and_a_half_cores(tmp_path):
    proc, root = cgroup_tree(tmp_path, "0::/kubepods/pod1/c1", {"kubepods/pod1/c1/cpu.max": "150000 100000"})
    assert cgroup_cpu_quota(proc, root) == 1.5


def test_v2_unlimited(tmp_path):
    proc, root = cgroup_tree(tmp_path, "0::/job", {"job/cpu.max": "max 100000"})
    assert cgroup_cpu_quota(proc, root) is None


def test_v2_stricter_parent_wins(tmp_path):
    proc, root = cgroup_tree(tmp_path, "0::/pod/container", {
        "pod/cpu.max": "50000 100000", "pod/container/cpu.max": "400000 100000"})
    assert cgroup_cpu_quota(proc, root) == 0.5


def test_v2_inside_a_cgroup_namespace_reads_the_mount_itself(tmp_path):
    proc, root = cgroup_tree(tmp_path, "0::/host/path/not/mounted", {"cpu.max": "200000 100000"})
    assert cgroup_cpu_quota(proc, root) == 2.0


def test_v1_quota_and_no_limit(tmp_path):
    proc, root = cgroup_tree(tmp_path, "4:cpu,cpuacct:/docker/abc", {
        "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000",
        "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000"})
    assert cgroup_cpu_quota(proc, root) == 3.0
    proc, root = cgroup_tree(tmp_path / "unlimited", "4:cpu,cpuacct:/", {
        "cpu,cpuacct/cpu.cfs_quota_us": "-1", "cpu,cpuacct/cpu.cfs_period_us": "100000"})
    assert cgroup_cpu_quota(proc, root) is None


def test_no_cgroup_information(tmp_path):
    assert cgroup_cpu_quota(str(tmp_path / "missing"), str(tmp_path)) is None


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="affinity masks are Linux-only")
def test_smaller_of_affinity_and_quota(tmp_path):
    cores = len(os.sched_getaffinity(0))
    proc, root = cgroup_tree(tmp_path, "0::/", {"cpu.max": "50000 100000"})
    assert usable_cpu_count(proc, root) == 0.5
    proc, root = cgroup_tree(tmp_path / "big", "0::/", {"cpu.max": f"{(cores + 8) * 100000} 100000"})
    assert usable_cpu_count(proc, root) == float(cores)
