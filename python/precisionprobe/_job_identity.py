"""Who is running: the job, host, pod and distributed rank fields shared by every event of a process.

Kubernetes pods learn their own name, namespace and IP through the downward API as environment
variables (POD_NAME, POD_NAMESPACE, POD_IP); torchrun sets RANK, LOCAL_RANK and WORLD_SIZE.
Outside those environments the fallbacks are the host name, "" and a local interface address.
"""
import os
import socket
import struct
import sys
import time
from dataclasses import dataclass

from ._cpu_quota import usable_cpu_count
from ._event_format import valid_text

JOB_ID_VARIABLE = "PRECISIONPROBE_JOB_ID"


@dataclass(frozen=True)
class JobIdentity:
    job_id: str
    host_name: str
    ip: str
    pod: str
    namespace: str
    rank: int
    local_rank: int
    world_size: int
    pid: int
    cpu_num: float

    @classmethod
    def from_environment(cls, job_id=None, environ=None):
        env = os.environ if environ is None else environ
        host_name = socket.gethostname()
        return cls(  # (text that is UTF-8 throughout: a variable's bytes may not be)
            job_id=valid_text(job_id or job_id_from_environment(env) or default_job_id()),
            host_name=valid_text(host_name),
            ip=valid_text(env.get("POD_IP") or local_ipv4()),
            pod=valid_text(env.get("POD_NAME") or host_name),
            namespace=valid_text(env.get("POD_NAMESPACE", "")),
            rank=_int_env(env, "RANK", 0),
            local_rank=_int_env(env, "LOCAL_RANK", 0),
            world_size=_int_env(env, "WORLD_SIZE", 1),
            pid=os.getpid(),
            cpu_num=usable_cpu_count(),
        )

    def for_current_process(self):
        """The same identity after a fork: only pid changes."""
        return JobIdentity(**{**self.__dict__, "pid": os.getpid()})

    def with_rank_now(self, torch=None, environ=None):
        """The rank fields as they are at the process's first model call, which the job header
        records: torch.distributed's rank and world size where its process group is initialized
        (torch.multiprocessing.spawn sets no RANK), else RANK, LOCAL_RANK and WORLD_SIZE as the
        environment has them then (a script may set them after importing torch, when the probe
        attached)."""
        env = os.environ if environ is None else environ
        rank = _int_env(env, "RANK", self.rank)
        local_rank = _int_env(env, "LOCAL_RANK", self.local_rank)
        world_size = _int_env(env, "WORLD_SIZE", self.world_size)
        try:
            distributed = torch.distributed if torch is not None else None
            if distributed is not None and distributed.is_available() and distributed.is_initialized():
                rank, world_size = distributed.get_rank(), distributed.get_world_size()
        except Exception:  # noqa: BLE001 - a process group being torn down: the environment's
            pass
        return JobIdentity(**{**self.__dict__, "rank": rank, "local_rank": local_rank, "world_size": world_size})


def is_blank_job_id(job_id):
    """A job id of nothing but white space names no job anyone can see: tables show it as a blank
    row and every job so named reads as one. The launcher, attach() and the environment refuse it."""
    return not job_id.strip()


def job_id_from_environment(environ=None):
    """$PRECISIONPROBE_JOB_ID, or None where it is unset or empty (the default then applies);
    ValueError where it holds only white space."""
    job_id = (os.environ if environ is None else environ).get(JOB_ID_VARIABLE) or None
    if job_id is not None and is_blank_job_id(job_id):
        raise ValueError(f"environment variable {JOB_ID_VARIABLE} holds only white space ({job_id!r}); give it a job "
                         "id, or unset it for the default")
    return job_id


def default_job_id(now=None):
    """A readable id that sorts by start time, unique per launching process."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"job-{stamp}-{os.getpid()}"


_warned_env = set()


def _int_env(env, name, default):
    """$NAME as an integer (default where unset). A value that is not an integer an event line
    can hold (a typo, or past 64 bits, which made every line of the file malformed for the
    readers) records default instead, said once: the hooks never stop the training for it."""
    text = env.get(name)
    if text is None:
        return default
    try:
        value = int(text)
        if -2**63 <= value < 2**63:
            return value
    except ValueError:
        pass
    if (name, text) not in _warned_env:
        _warned_env.add((name, text))
        print(f"precisionprobe: warning: environment variable {name} is {text[:40]!r}, not a 64-bit integer; "
              f"the events record {name.lower()} {default}", file=sys.stderr, flush=True)
    return default


def local_ipv4():
    """The IPv4 address of the first non-loopback interface, without sending any packet."""
    for address in _interface_addresses():
        if not address.startswith("127."):
            return address
    try:
        address = socket.gethostbyname(socket.gethostname())
        if not address.startswith("127."):
            return address
    except OSError:
        pass
    return "127.0.0.1"


def _interface_addresses():
    try:
        import fcntl
        names = [name for _, name in socket.if_nameindex()]
    except (ImportError, OSError, AttributeError):
        return []
    siocgifaddr = 0x8915
    addresses = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for name in names:
            try:
                packed = fcntl.ioctl(probe.fileno(), siocgifaddr, struct.pack("256s", name[:15].encode()))
            except OSError:  # interface without an IPv4 address
                continue
            addresses.append(socket.inet_ntoa(packed[20:24]))
    return addresses
