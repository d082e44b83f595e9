"""dcgm-exporter's output format for emulated GPUs: Prometheus text (live) and OpenMetrics (backfill).

Series names, label set and value formatting are dcgm-exporter's, so every reader of real DCGM
data reads these unchanged:

  # HELP DCGM_FI_PROF_SM_ACTIVE EMULATED by precisionprobe, not a GPU counter: The ratio of ...
  # TYPE DCGM_FI_PROF_SM_ACTIVE gauge
  DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-...",pci_bus_id="00000000:17:00.0",device="nvidia0",
    modelName="Emulated Tesla V100-SXM2-32GB (precisionprobe emulator)",Hostname="node1",
    DCGM_FI_DRIVER_VERSION="emulated",container="",namespace="",pod=""} 0.512000

What tells a user these are not real counters: the HELP text of every family, the modelName and
DCGM_FI_DRIVER_VERSION label values, and a `# precisionprobe DCGM emulator` comment line first
(text format only; OpenMetrics allows no free comments). GPU_UTIL and FB_USED print as %d, the
DCGM_FI_PROF_* ratios as %f. Like dcgm-exporter's, the live text carries no timestamps by
default (Prometheus stores its scrape time); only the IDEALISED timing modes (exact, offset) append
an explicit timestamp in ms to each sample (live.py, timing.py). The OpenMetrics for backfill
carries each sample's stored time, as a backfill must.
"""
import uuid as uuid_module
from dataclasses import dataclass

from .profile import INTEGER_METRICS, METRICS

EMULATOR_NAME = "precisionprobe DCGM emulator"
HELP = {  # dcgm-exporter's help strings, after the emulator's notice
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilization (in %).",
    "DCGM_FI_DEV_FB_USED": "Framebuffer memory used (in MiB).",
    "DCGM_FI_PROF_DRAM_ACTIVE": "Ratio of cycles the device memory interface is active sending or receiving data.",
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE": "Ratio of cycles the fp32 pipes are active.",
    "DCGM_FI_PROF_SM_ACTIVE": "The ratio of cycles an SM has at least 1 warp assigned.",
    "DCGM_FI_PROF_SM_OCCUPANCY": "The ratio of number of warps resident on an SM.",
}
HELP_PREFIX = "EMULATED by precisionprobe, not a GPU counter (window average of a ground-truth profile): "
DRIVER_VERSION = "emulated"


def emulated_uuid(host_name, index, process=None):
    """A well-formed GPU UUID that is stable per host and index, or per host and process where
    one is given (each replayed process's GPU its own, whichever run it is of, and whatever other
    processes sort before it), and never a real one's."""
    where = f"{host_name}/{index}" if process is None else f"{host_name}/process/{process}"
    # (A lone surrogate, which a JSON escape in an event file can give a job id, written as its
    # escape: uuid5 encodes the name as UTF-8.)
    name = f"precisionprobe-emulator://{where}".encode("utf-8", "backslashreplace").decode("utf-8")
    return "GPU-" + str(uuid_module.uuid5(uuid_module.NAMESPACE_URL, name))


@dataclass(frozen=True)
class EmulatedGpu:
    index: int
    uuid: str
    host_name: str
    model_name: str
    pod: str = ""
    namespace: str = ""
    container: str = ""

    @property
    def pci_bus_id(self):
        return f"00000000:{0x17 + self.index:02X}:00.0"

    def labels(self):
        """dcgm-exporter's label set in its order, values escaped for both formats."""
        pairs = (("gpu", str(self.index)), ("UUID", self.uuid), ("pci_bus_id", self.pci_bus_id),
                 ("device", f"nvidia{self.index}"), ("modelName", self.model_name),
                 ("Hostname", self.host_name), ("DCGM_FI_DRIVER_VERSION", DRIVER_VERSION),
                 ("container", self.container), ("namespace", self.namespace), ("pod", self.pod))
        return ",".join(f'{k}="{escape(v)}"' for k, v in pairs)


def escape(value):
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(metric, value):
    return "%d" % int(round(value)) if metric in INTEGER_METRICS else "%f" % value


def metrics_text(gpus, values, timestamp_ms=None):
    """Prometheus text exposition of one collection: values[g] in METRICS order per GPU;
    timestamp_ms: an explicit sample timestamp (idealised modes only), else none is printed."""
    lines = [f"# {EMULATOR_NAME}: emulated GPUs, values are window averages of a profile, "
             "not measurements"]
    stamp = "" if timestamp_ms is None else f" {int(timestamp_ms)}"
    label_texts = [gpu.labels() for gpu in gpus]
    for m, metric in enumerate(METRICS):
        lines.append(f"# HELP {metric} {HELP_PREFIX}{HELP[metric]}")
        lines.append(f"# TYPE {metric} gauge")
        for g, labels in enumerate(label_texts):
            lines.append(f"{metric}{{{labels}}} {format_value(metric, values[g][m])}{stamp}")
    return "\n".join(lines) + "\n"


def _seconds_text(ms):
    ms = int(ms)
    return f"{ms // 1000}.{ms % 1000:03d}"


def write_openmetrics(out, gpus, tick_ms, values_per_gpu):
    """OpenMetrics for `promtool tsdb create-blocks-from openmetrics`.

    tick_ms: sample times (ms, ascending); values_per_gpu[g]: (k x 6) in METRICS order.
    """
    for m, metric in enumerate(METRICS):
        out.write(f"# HELP {metric} {HELP_PREFIX}{HELP[metric]}\n")
        out.write(f"# TYPE {metric} gauge\n")
        for g, gpu in enumerate(gpus):
            prefix = f"{metric}{{{gpu.labels()}}} "
            column = values_per_gpu[g][:, m]
            out.writelines(f"{prefix}{format_value(metric, v)} {_seconds_text(t)}\n"
                           for t, v in zip(tick_ms, column))
    out.write("# EOF\n")
