"""A DLRM-like training timeline for offline emulation: which leaf layer ran when, on one GPU.

The layers are those the hook client records for the reference DLRM (workloads/dlrm.py) with the
paper's sizes: bottom MLP 512-512-64 (bot_l.0-3), 8 EmbeddingBag tables (emb_l.0-7), top MLP
1024-1024-1024-1 with a sigmoid last (top_l.0-7), MSELoss; forward in that order, backward in
reverse. Per call:

  duration   the layer's base duration (EmbeddingBag 1.2-3 ms per table, Linear 0.3-1.6 ms,
             ReLU/Sigmoid/MSELoss 0.1-0.2 ms; backward 1-2x forward) times a log-normal jitter
             (sigma 0.2), clipped to [0.1, 5] ms;
  gaps       untracked time that no module hook sees: launch gaps of 10-80 us between layers,
             the feature interaction (0.4-1.2 ms) after the embeddings, the call to backward
             (0.2-0.6 ms), the optimizer step (1.5-3.5 ms), data loading before each batch
             (2-25 ms), and in 1% of the batches a stall of 50-500 ms (logging, evaluation).

An iteration takes about 80 ms, so a 100 ms window holds about one and a 10 s window about 125;
the partial iterations at window edges, the jitter and the gaps make each window's mix of layers
slightly different, which is what lets an estimator separate the layers.
"""
from dataclasses import dataclass

import numpy as np

FORWARD_LAYERS = (
    [("bot_l.0", "Linear"), ("bot_l.1", "ReLU"), ("bot_l.2", "Linear"), ("bot_l.3", "ReLU")]
    + [(f"emb_l.{k}", "EmbeddingBag") for k in range(8)]
    + [("top_l.0", "Linear"), ("top_l.1", "ReLU"), ("top_l.2", "Linear"), ("top_l.3", "ReLU"),
       ("top_l.4", "Linear"), ("top_l.5", "ReLU"), ("top_l.6", "Linear"), ("top_l.7", "Sigmoid"),
       ("loss_fn", "MSELoss")]
)
BASE_FORWARD_MS = {"bot_l.0": 0.6, "bot_l.1": 0.12, "bot_l.2": 0.3, "bot_l.3": 0.1,
                   "top_l.0": 1.2, "top_l.1": 0.2, "top_l.2": 1.6, "top_l.3": 0.2, "top_l.4": 1.6,
                   "top_l.5": 0.2, "top_l.6": 0.15, "top_l.7": 0.1, "loss_fn": 0.12}
EMBEDDING_MS = (1.2, 3.0)  # per table, drawn once per timeline (tables differ in pooling)
BACKWARD_FACTOR = {"Linear": 2.0, "ReLU": 1.2, "EmbeddingBag": 1.6, "Sigmoid": 1.0, "MSELoss": 1.0}
JITTER_SIGMA = 0.2
DURATION_MS = (0.1, 5.0)
LAUNCH_GAP_MS = (0.01, 0.08)
INTERACTION_MS = (0.4, 1.2)
BACKWARD_CALL_MS = (0.2, 0.6)
OPTIMIZER_MS = (1.5, 3.5)
DATA_LOADING_MS = (2.0, 25.0)
STALL_PROBABILITY, STALL_MS = 0.01, (50.0, 500.0)
BATCHES_PER_EPOCH = 1000


@dataclass
class Events:
    """One row per layer call, ordered by start: arrays of equal length plus the layer table."""
    layers: list          # (name, type) per layer id
    layer_id: np.ndarray  # index into layers
    forward: np.ndarray   # bool
    batch: np.ndarray
    t_start_ns: np.ndarray
    t_end_ns: np.ndarray

    def __len__(self):
        return len(self.layer_id)

    @property
    def epoch(self):
        return self.batch // BATCHES_PER_EPOCH


def dlrm_timeline(start_ns, seconds, seed):
    """Layer calls from start_ns for `seconds` seconds (whole calls only), reproducible by seed."""
    rng = np.random.default_rng(seed)
    n_layers = len(FORWARD_LAYERS)
    base = np.array([BASE_FORWARD_MS.get(name, 0.0) for name, _ in FORWARD_LAYERS])
    is_emb = np.array([kind == "EmbeddingBag" for _, kind in FORWARD_LAYERS])
    base[is_emb] = rng.uniform(*EMBEDDING_MS, is_emb.sum())
    backward_base = base * np.array([BACKWARD_FACTOR[kind] for _, kind in FORWARD_LAYERS])
    # Order of one iteration: forward 0..n-1, backward n-1..0.
    order = np.concatenate([np.arange(n_layers), np.arange(n_layers)[::-1]])
    forward = np.concatenate([np.ones(n_layers, bool), np.zeros(n_layers, bool)])
    base_ms = np.concatenate([base, backward_base[::-1]])
    per_iter = len(order)
    first_top = next(i for i, (name, _) in enumerate(FORWARD_LAYERS) if name == "top_l.0")

    iterations = int(seconds * 1000 / 60) + 16  # an iteration takes 70 ms or more
    shape = (iterations, per_iter)
    durations = np.clip(base_ms * rng.lognormal(0.0, JITTER_SIGMA, shape), *DURATION_MS)
    gaps = rng.uniform(*LAUNCH_GAP_MS, shape)  # untracked time before each call
    gaps[:, first_top] += rng.uniform(*INTERACTION_MS, iterations)
    gaps[:, n_layers] += rng.uniform(*BACKWARD_CALL_MS, iterations)
    gaps[:, 0] += rng.uniform(*DATA_LOADING_MS, iterations)
    gaps[1:, 0] += rng.uniform(*OPTIMIZER_MS, iterations - 1)  # the previous batch's step
    stalls = rng.random(iterations) < STALL_PROBABILITY
    gaps[stalls, 0] += rng.uniform(*STALL_MS, stalls.sum())

    steps_ns = np.rint(np.stack([gaps, durations], axis=2).reshape(-1) * 1e6).astype(np.int64)
    ends = start_ns + np.cumsum(steps_ns)
    t_end = ends[1::2]
    t_start = t_end - steps_ns[1::2]
    keep = t_end <= start_ns + int(seconds * 1e9)
    return Events(layers=list(FORWARD_LAYERS),
                  layer_id=np.tile(order, iterations)[keep],
                  forward=np.tile(forward, iterations)[keep],
                  batch=np.repeat(np.arange(iterations), per_iter)[keep],
                  t_start_ns=t_start[keep], t_end_ns=t_end[keep])
