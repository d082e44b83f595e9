"""Pure-PyTorch training workloads of the paper's comparison: dlrm, resnext, gpt2.

Each is runnable as `python3 -m precisionprobe.workloads.NAME --iterations N [--device cpu|cuda]`
and has small defaults that run on 2 CPU cores in seconds. They know nothing about the probe.
"""
