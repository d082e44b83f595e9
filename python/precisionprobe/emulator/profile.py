"""Profiles: the ground-truth counter values of an emulated GPU, per layer type and direction.

A profile is a JSON file. The package ships three, as package data in emulator/profiles/ (dlrm,
resnext, gpt2: emulation inputs shaped on the paper, not measurements); Profile.named("dlrm")
loads one of them, and any other file is named by its path:

  {
    "description": "what this models and why these numbers",
    "model_name": "Emulated Tesla V100-SXM2-32GB (precisionprobe emulator)",   # optional
    "idle":        {METRIC: value, ...},          # between layers: nothing of ours runs
    "layer_types": {"Linear": {"forward": {METRIC: value, ...}, "backward": {...}}, ...},
    "default":     {"forward": {...}, "backward": {...}},    # optional: unknown layer types
    "layers":      {"emb_l.0": {"forward": {...}}}           # optional: one layer's own values
  }

Every values object names all six METRICS. Units are those dcgm-exporter publishes: GPU_UTIL in
percent (0-100), FB_USED in MiB, the four DCGM_FI_PROF_* fields as ratios (0-1). A layer's value
is, in this order of precedence, its own ("layers"), its type's, or the default; a layer type
that none of these covers is an error when the emulator meets it (say so in "default").

A profile file is a regular file of UTF-8 JSON of at most MAX_PROFILE_BYTES (16 MiB): a pipe, a
device or a directory is refused before it is read.
"""
import json
import os
import stat
from importlib import resources
from pathlib import Path

import numpy as np

from .._path_kind import kind

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
DRAM_ACTIVE = "DCGM_FI_PROF_DRAM_ACTIVE"
FP32_ACTIVE = "DCGM_FI_PROF_PIPE_FP32_ACTIVE"
SM_ACTIVE = "DCGM_FI_PROF_SM_ACTIVE"
SM_OCCUPANCY = "DCGM_FI_PROF_SM_OCCUPANCY"
# The paper's Table I, in the order every values array of this package uses.
METRICS = (GPU_UTIL, FB_USED, DRAM_ACTIVE, FP32_ACTIVE, SM_ACTIVE, SM_OCCUPANCY)
INTEGER_METRICS = (GPU_UTIL, FB_USED)  # dcgm-exporter prints these with %d
PROF_METRICS = (DRAM_ACTIVE, FP32_ACTIVE, SM_ACTIVE, SM_OCCUPANCY)
# FB_USED's: 16 TiB in MiB, far above any GPU's memory, and small enough that the emulator's
# arithmetic on it stays exact.
UPPER_BOUNDS = {GPU_UTIL: 100.0, FB_USED: float(1 << 24), DRAM_ACTIVE: 1.0, FP32_ACTIVE: 1.0, SM_ACTIVE: 1.0,
                SM_OCCUPANCY: 1.0}
DIRECTIONS = ("forward", "backward")
DEFAULT_MODEL_NAME = "Emulated Tesla V100-SXM2-32GB (precisionprobe emulator)"
# The profiles shipped with the package (package data, so an installed package has them too).
PROFILES = resources.files(__package__) / "profiles"
# A profile is a few kB of JSON; a file far larger is not one (and is not read whole).
MAX_PROFILE_BYTES = 16 << 20


class ProfileError(ValueError):
    pass


def _read_file(path):
    """The bytes of a profile file: refuses what is no regular file (a pipe would block, a device
    never end) and a file over MAX_PROFILE_BYTES, before reading it."""
    # O_NONBLOCK: opening a named pipe does not wait for a writer; fstat then refuses it.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ProfileError(f"cannot read profile {path}: it is {kind(mode)}, not a file")
        with open(fd, "rb", closefd=False) as f:
            data = f.read(MAX_PROFILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_PROFILE_BYTES:
        raise ProfileError(f"cannot read profile {path}: larger than {MAX_PROFILE_BYTES >> 20} MiB, "
                           "which no profile is")
    return data


def _values(obj, where):
    if not isinstance(obj, dict):
        raise ProfileError(f"{where}: expected an object of the six metrics")
    missing = [m for m in METRICS if m not in obj]
    unknown = sorted(set(obj) - set(METRICS))
    if missing or unknown:
        raise ProfileError(f"{where}: missing {missing}" if missing else f"{where}: unknown metrics {unknown}")
    out = np.empty(len(METRICS))
    for k, metric in enumerate(METRICS):
        value = obj[metric]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProfileError(f"{where}.{metric}: not a number: {value!r}")
        upper = UPPER_BOUNDS[metric]
        if not 0 <= value <= upper:
            raise ProfileError(f"{where}.{metric}: {value} outside [0, {upper:.10g}]")
        out[k] = float(value)
    return out


def _directions(obj, where, required):
    if not isinstance(obj, dict):
        raise ProfileError(f"{where}: expected {{\"forward\": ..., \"backward\": ...}}")
    unknown = sorted(set(obj) - set(DIRECTIONS))
    if unknown:
        raise ProfileError(f"{where}: unknown keys {unknown} (use forward, backward)")
    out = {}
    for direction in DIRECTIONS:
        if direction in obj:
            out[direction == "forward"] = _values(obj[direction], f"{where}.{direction}")
        elif required:
            raise ProfileError(f"{where}: missing {direction}")
    return out


def _named_objects(data, key, source):
    """data[key] (absent: {}), which must be an object of names."""
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ProfileError(f"{source}: \"{key}\": expected an object of names, not {type(value).__name__} "
                           f"{json.dumps(value)[:60]}")
    return value


def _text(data, key, default, source):
    """data[key] (absent: default), which must be a string of one line."""
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ProfileError(f"{source}: \"{key}\": expected a string, not {type(value).__name__} "
                           f"{json.dumps(value)[:60]}")
    return value


class Profile:
    """Ground-truth values: value(layer, layer_type, forward) -> array in METRICS order."""

    def __init__(self, data, source="<profile>"):
        if not isinstance(data, dict):
            raise ProfileError(f"{source}: a profile is a JSON object")
        self.source = str(source)
        self.name = self.source  # how users name it: a shipped profile's name, else its file
        self.description = _text(data, "description", "", source)
        self.model_name = _text(data, "model_name", DEFAULT_MODEL_NAME, source)
        if not self.model_name.strip() or not self.model_name.isprintable():
            raise ProfileError(f"{source}: \"model_name\": {json.dumps(self.model_name)} is not a name of one "
                               "printable line (it is the modelName label of every series)")
        if "idle" not in data or "layer_types" not in data:
            raise ProfileError(f"{source}: needs \"idle\" and \"layer_types\"")
        self.idle = _values(data["idle"], "idle")
        self.types = {name: _directions(v, f"layer_types.{name}", True)
                      for name, v in _named_objects(data, "layer_types", source).items()}
        self.default = _directions(data["default"], "default", True) if "default" in data else None
        self.layers = {name: _directions(v, f"layers.{name}", False)
                       for name, v in _named_objects(data, "layers", source).items()}
        self.data = data

    @classmethod
    def load(cls, path):
        """A profile from a JSON file: a path, or a file of importlib.resources (PROFILES / ...)."""
        if not hasattr(path, "read_bytes"):
            path = Path(path)
        try:
            data = _read_file(path) if isinstance(path, Path) else path.read_bytes()
            data = json.loads(data.decode("utf-8"))
        except OSError as error:
            raise ProfileError(f"cannot read profile {path}: {error.strerror or error}") from None
        except UnicodeDecodeError as error:
            raise ProfileError(f"{path}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset "
                               f"{error.start})") from None
        except json.JSONDecodeError as error:
            raise ProfileError(f"{path}: not JSON: {error}") from None
        return cls(data, path)

    @classmethod
    def named(cls, name):
        """A profile shipped with the package by name ("dlrm"), or a path to a profile file."""
        path = Path(name)
        if not path.suffix and not path.exists():
            shipped = sorted(p.name[:-5] for p in PROFILES.iterdir() if p.name.endswith(".json"))
            if name not in shipped:
                raise ProfileError(f"no profile {name!r} (shipped: {', '.join(shipped)}; or a path to a profile file)")
            profile = cls.load(PROFILES / f"{name}.json")
            profile.name = name
            return profile
        return cls.load(path)

    def value(self, layer, layer_type, forward):
        forward = bool(forward)
        own = self.layers.get(layer)
        if own and forward in own:
            return own[forward]
        by_type = self.types.get(layer_type) or self.default
        if by_type is None:
            raise ProfileError(f"{self.source}: no values for layer type {layer_type!r} "
                               f"(layer {layer!r}) and no \"default\"")
        return by_type[forward]
