"""The `batch` field: which mini-batch a layer event belongs to, found without user code.

Rule. A "top-level call" is a module call made while no other module call is running on that
thread (`model(x)`, `loss_fn(z, y)`; not the layers inside them). The first top-level call starts
batch 0; later top-level calls start a new batch when

  (a) a backward pass has begun since the current batch started (training: forward, backward,
      then the next forward is the next batch; gradient accumulation counts each micro-batch), or
  (b) the call is to the module that opened the current batch (its "root") and we are in
      inference: grad is disabled, or no backward pass has ever run in this process, or
  (c) grad mode changed (a validation pass under `torch.no_grad()` between training steps).

So `model(x); loss_fn(z, y); loss.backward(); optimizer.step()` is one batch per iteration,
and so is `with torch.no_grad(): model(x)` in an evaluation loop. Backward events carry the batch
of the forward call that built their graph. Known miss: a training step that calls the same
root twice before its first backward ever (siamese networks) counts as two batches in that
first step only.
"""
import weakref


class BatchTracker:
    def __init__(self):
        self.batch = 0
        self._root = None  # weakref to the module that opened the current batch
        self._grad_enabled = None
        self._started = False
        self._backward_since_start = False
        self._backward_ever = False

    def on_top_level_call(self, module, grad_enabled):
        """Called when a top-level module call starts; returns True when it opens a new batch."""
        if self._started:
            same_root = self._root is not None and self._root() is module
            inference = not grad_enabled or not self._backward_ever
            if not (self._backward_since_start
                    or (same_root and inference)
                    or grad_enabled != self._grad_enabled):
                return False
            self.batch += 1
        self._started = True
        self._root = weakref.ref(module)
        self._grad_enabled = grad_enabled
        self._backward_since_start = False
        return True

    def on_backward(self):
        """Called when a backward pass reaches a tracked module."""
        self._backward_since_start = True
        self._backward_ever = True
