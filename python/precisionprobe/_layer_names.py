"""Names and types of modules, computed once per module and cached for the hot path.

A layer's name is its qualified path in the model that contains it (`top_l.2`, `emb_l.3`,
`loss_fn`), the key `named_modules()` gives it; a path that starts with an index (the children of a
top-level `nn.Sequential` or `nn.ModuleList` are `0`, `1`, ...) is prefixed with the model's class
name (`Sequential.0`), so that it says whose child it is. Global hooks see modules, not models, so when a
module with children is called at top level its whole tree is named at once; a module called
before any model containing it has been seen keeps its class name as its layer name until one is.
A block called at top level before the model containing it (run in the model's __init__ to learn
its output size) names its layers as a model would; once the model is called, they take their
paths in it, so that two such blocks do not give their layers the same names. A module that two
models hold (not one inside the other) keeps the name the first gave it.
"""
import json
import weakref

from ._event_format import valid_text


class ModuleInfo:
    """What the writer needs about one module: its JSON fragment, ready to paste into a line."""
    __slots__ = ("name", "type_name", "is_leaf", "container", "provisional", "root", "fragment",
                 "called_at_top_level")

    def __init__(self, name, type_name, is_leaf, provisional=False, root=None, called_at_top_level=False):
        self.name = name = valid_text(name)
        self.type_name = type_name = valid_text(type_name)
        self.is_leaf = is_leaf  # no child modules
        # Once a call of it has called a module (on its thread): not timed, its calls are. A module
        # whose children never run as modules (nn.MultiheadAttention uses out_proj's weights
        # itself; a TorchScript module runs its own) is timed as a layer.
        self.container = False
        self.provisional = provisional  # named after its class until a model containing it is seen
        self.root = root  # id() of the module whose tree gave the name
        self.called_at_top_level = called_at_top_level  # a model (the probe's stale-stack check)
        self.fragment = f'"layer":{json.dumps(name)},"layer_type":{json.dumps(type_name)},'


# The classes of TorchScript modules (torch.jit.script, torch.jit.trace); each keeps the name of
# the class it was made from in `original_name`.
_TORCHSCRIPT_CLASSES = {"RecursiveScriptModule", "TopLevelTracedModule", "TracedModule"}


def class_name(module):
    """The module's class name; a TorchScript module's is that of the class it was made from."""
    name = type(module).__name__
    if name in _TORCHSCRIPT_CLASSES:
        original = getattr(module, "original_name", None)
        if isinstance(original, str) and original:
            return original
    return name


def is_leaf_module(module):
    """Whether a module has no child modules (`None` placeholders do not count)."""
    return not any(child is not None for child in module._modules.values())


class LayerRegistry:
    """id(module) -> ModuleInfo; an entry disappears when its module is garbage collected."""

    def __init__(self):
        self._infos = {}
        self._refs = {}
        self.get_by_id = self._infos.get  # hot path: registry.get_by_id(id(module))

    def describe(self, module, top_level_module=None):
        """Slow path for a module not seen yet; names the whole tree of the top-level module."""
        if top_level_module is not None:
            self._name_tree(top_level_module)
        info = self._infos.get(id(module))
        if info is None:
            info = self._add(module, class_name(module), provisional=True)
        return info

    def _name_tree(self, root):
        root_name, root_id = class_name(root), id(root)
        walked = set()  # named_modules() walks a module before the modules below it
        for name, module in root.named_modules():
            known = self._infos.get(id(module))
            if known is None or (name and (known.provisional or (known.root != root_id and known.root in walked))):
                if name[:1].isdigit():
                    name = f"{root_name}.{name}"
                self._add(module, name or class_name(module), provisional=not name, root=root_id,
                          called_at_top_level=known is not None and known.called_at_top_level)
            walked.add(id(module))

    def _add(self, module, name, provisional, root=None, called_at_top_level=False):
        info = ModuleInfo(name, class_name(module), is_leaf_module(module), provisional, root,
                          called_at_top_level)
        key = id(module)
        infos, refs = self._infos, self._refs

        def forget(_ref):  # runs when the module is freed, before its id can be reused
            infos.pop(key, None)
            refs.pop(key, None)

        infos[key] = info
        if key not in refs:
            refs[key] = weakref.ref(module, forget)
        return info
