"""The `epoch` field: how many times the training DataLoader has been restarted.

The first DataLoader whose iterator is created is taken as the training loader; each later
`iter()` of that same loader (the next `for batch in loader:`) starts a new epoch. Other loaders
(validation) do not count. A job that uses no DataLoader stays at epoch 0.
"""
import weakref


class EpochTracker:
    def __init__(self):
        self.epoch = 0
        self._loader = None  # weakref to the training loader
        self._patched = None

    def on_loader_iter(self, loader):
        if self._loader is None or self._loader() is None:
            self._loader = weakref.ref(loader)
        elif self._loader() is loader:
            self.epoch += 1

    def install(self, dataloader_class):
        """Wraps `dataloader_class.__iter__` so that every new iterator is reported."""
        original = dataloader_class.__iter__
        tracker = self

        def __iter__(loader):
            tracker.on_loader_iter(loader)
            return original(loader)

        __iter__.__wrapped__ = original
        dataloader_class.__iter__ = __iter__
        self._patched = (dataloader_class, original, __iter__)

    def uninstall(self):
        if self._patched is None:
            return
        dataloader_class, original, wrapper = self._patched
        if dataloader_class.__dict__.get("__iter__") is wrapper:  # nobody wrapped it after us
            dataloader_class.__iter__ = original
        self._patched = None
