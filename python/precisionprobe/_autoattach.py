"""Attaching inside a process started by the launcher, from environment variables.

The launcher sets PRECISIONPROBE_ATTACH=1, PRECISIONPROBE_JOB_ID, PRECISIONPROBE_OUT and
PRECISIONPROBE_LAUNCHER_PID, and puts precisionprobe/_bootstrap (holding a sitecustomize.py)
first on PYTHONPATH, so every Python process of the job runs attach_when_torch_imported() at
startup. Python processes that never import torch (shell helpers, pip) pay nothing more: the
probe attaches right after `import torch` finishes, before any model can exist.
"""
import importlib.abc
import importlib.util
import os
import sys

ENV_ATTACH = "PRECISIONPROBE_ATTACH"
ENV_JOB_ID = "PRECISIONPROBE_JOB_ID"
ENV_OUT = "PRECISIONPROBE_OUT"
ENV_LAUNCHER_PID = "PRECISIONPROBE_LAUNCHER_PID"


def attach_from_env():
    import precisionprobe
    # The launcher's own child always prints its summary line; other processes of the job
    # (torchrun workers, DataLoader workers) only when they recorded something.
    direct_child = str(os.getppid()) == os.environ.get(ENV_LAUNCHER_PID)
    # attach() reads the job id from ENV_JOB_ID itself, naming the variable if it cannot use it.
    precisionprobe.attach(out=os.environ.get(ENV_OUT),
                          summary="always" if direct_child else "auto")


def attach_when_torch_imported():
    if os.environ.get(ENV_ATTACH) != "1":
        return
    if "torch" in sys.modules:
        _attach_safely()
    else:
        sys.meta_path.insert(0, _TorchImportWatcher())


def _attach_safely():
    try:
        attach_from_env()
    except Exception as error:  # noqa: BLE001 - a probe problem must not stop the training job
        print(f"precisionprobe: warning: could not attach: {error!r}", file=sys.stderr)


class _TorchImportWatcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of `torch` so that attach runs after it."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_torch = spec.loader.exec_module

        def exec_module(module):
            exec_torch(module)
            _attach_safely()

        spec.loader.exec_module = exec_module  # this loader object belongs to this spec only
        return spec
