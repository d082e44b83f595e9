"""Run by Python at startup in every process of a job started by `precisionprobe run`.

The launcher put this folder first on PYTHONPATH. It arranges for the probe to attach as soon
as torch is imported, then runs the sitecustomize that this file shadows (Debian ships one).
"""


def _main():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    package_parent = os.path.dirname(os.path.dirname(here))
    if package_parent not in sys.path:
        sys.path.append(package_parent)
    try:
        from precisionprobe._autoattach import attach_when_torch_imported
        attach_when_torch_imported()
    except Exception as error:  # noqa: BLE001 - never stop the user's program
        print(f"precisionprobe: warning: not attached: {error!r}", file=sys.stderr)

    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        shadowed = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(shadowed)


_main()
del _main
