"""How many CPU cores this process may use: the `cpu_num` field of every event.

Two limits apply and the smaller one wins: the CPU affinity mask (taskset, cpuset, Kubernetes
static CPU manager) and the CFS bandwidth quota of the process's cgroup (Kubernetes CPU limits,
`docker --cpus`). A quota of 150000/100000 allows 1.5 cores, so the result is a float.
"""
import os

CGROUP_ROOT = "/sys/fs/cgroup"


def usable_cpu_count(proc_cgroup_path="/proc/self/cgroup", cgroup_root=CGROUP_ROOT):
    """Cores this process may use: min(affinity mask size, cgroup quota), as a float."""
    cores = float(_affinity_size())
    quota = cgroup_cpu_quota(proc_cgroup_path, cgroup_root)
    if quota is not None:
        cores = min(cores, quota)
    return cores


def _affinity_size():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def cgroup_cpu_quota(proc_cgroup_path="/proc/self/cgroup", cgroup_root=CGROUP_ROOT):
    """Cores allowed by the CFS quota of this process's cgroup and its ancestors, None if unlimited.

    Handles cgroup v2 (`cpu.max`: "max 100000" or "150000 100000") and v1
    (`cpu.cfs_quota_us` = -1 for none, `cpu.cfs_period_us`). Inside a container the path listed in
    /proc/self/cgroup may not exist under the mount (cgroup namespaces), so the mount itself is read too.
    """
    try:
        with open(proc_cgroup_path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        hierarchy_id, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy_id == "0" and controllers == "":
            for directory in _dirs_from_leaf_to_mount(os.path.join(cgroup_root), path):
                limits.append(_read_v2_quota(directory))
        elif "cpu" in controllers.split(","):
            for mount in (os.path.join(cgroup_root, controllers), os.path.join(cgroup_root, "cpu")):
                if os.path.isdir(mount):
                    for directory in _dirs_from_leaf_to_mount(mount, path):
                        limits.append(_read_v1_quota(directory))
                    break
    limits = [limit for limit in limits if limit is not None]
    return min(limits) if limits else None


def _dirs_from_leaf_to_mount(mount, path):
    """The cgroup's own directory and every ancestor up to the mount, those that exist."""
    parts = [p for p in path.split("/") if p]
    dirs = [os.path.join(mount, *parts[:n]) for n in range(len(parts), 0, -1)]
    dirs.append(mount)
    return [d for d in dirs if os.path.isdir(d)]


def _read_v2_quota(directory):
    text = _read(os.path.join(directory, "cpu.max"))
    if text is None:
        return None
    fields = text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _read_v1_quota(directory):
    quota = _read(os.path.join(directory, "cpu.cfs_quota_us"))
    period = _read(os.path.join(directory, "cpu.cfs_period_us"))
    if quota is None or period is None:
        return None
    return _ratio(quota, period)


def _ratio(quota, period):
    try:
        quota, period = int(quota), int(period)
    except ValueError:
        return None
    if quota <= 0 or period <= 0:  # -1 means "no limit" in v1
        return None
    return quota / period


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None
