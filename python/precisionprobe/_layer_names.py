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
    __slots__ = ("name", "type_name", "is_leaf", "provisional", "root", "fragment", "called_at_top_level",
                 "ignored")

    def __init__(self, name, type_name, is_leaf, provisional=False, root=None, called_at_top_level=False):
        self.name = name = valid_text(name)
        self.type_name = type_name = valid_text(type_name)
        # No child modules. A module with children is a layer in each call that calls none of
        # them as modules (nn.MultiheadAttention uses out_proj's weights itself; a TorchScript
        # module runs its own; a fast path runs fused kernels), and not in a call that does.
        self.is_leaf = is_leaf
        self.provisional = provisional  # named after its class until a model containing it is seen
        self.root = root  # id() of the module whose tree gave the name
        self.called_at_top_level = called_at_top_level  # a model (the probe's stale-stack check)
        self.fragment = f'"layer":{json.dumps(name)},"layer_type":{json.dumps(type_name)},'
        # Part of how another module computes a parameter (is_parametrization): its calls are
        # that module's, not calls of a layer of their own, and are not seen by the hooks.
        self.ignored = False


# The classes of TorchScript modules (torch.jit.script, torch.jit.trace); each keeps the name of
# the class it was made from in `original_name`.
_TORCHSCRIPT_CLASSES = {"RecursiveScriptModule", "TopLevelTracedModule", "TracedModule"}


def class_name(module):
    """The module's class name; a TorchScript module's is that of the class it was made from,
    and a parametrized module's (spectral_norm's ParametrizedConv2d) that of the class it was
    before (Conv2d): the same layer type, whether the module was parametrized or not yet."""
    cls = type(module)
    name = cls.__name__
    if name.startswith("Parametrized") and cls.__module__ == "torch.nn.utils.parametrize" and cls.__bases__:
        return cls.__bases__[0].__name__
    if name in _TORCHSCRIPT_CLASSES:
        original = getattr(module, "original_name", None)
        if isinstance(original, str) and original:
            return original
    return name


def is_parametrization(module):
    """Whether module is a torch.nn.utils.parametrize.ParametrizationList: what a parametrized
    module (spectral_norm, orthogonal, weight_norm's newer form) calls to compute its weight
    inside its own forward, as a module (and once at top level, when it is registered)."""
    cls = type(module)
    return cls.__name__ == "ParametrizationList" and cls.__module__ == "torch.nn.utils.parametrize"


def architecture(model):
    """What tells two models of one class apart: each module's path, class and sizes as its
    extra_repr() gives them ("in_features=2, out_features=4, bias=True"): a notebook's model made
    anew has the same; a GAN's two nn.Sequential, or a teacher and its smaller student, do not.
    (No tensor is read: under torch.jit.trace, reading a parameter would enter the traced graph.)"""
    def sizes(module):
        try:
            return module.extra_repr()
        except Exception:  # noqa: BLE001 - a module's own extra_repr; the path and class remain
            return ""
    return tuple((name, class_name(module), sizes(module)) for name, module in model.named_modules())


def is_leaf_module(module):
    """Whether a module has no child modules (`None` placeholders do not count)."""
    return not any(child is not None for child in module._modules.values())


# A model whose forward makes modules as it runs (`nn.ReLU()(x)`) calls a module not seen yet
# at every step, and none is in its tree: walking the tree each time made a step of a model of
# 3,000 modules 200 times slower. After a walk that found nothing, the next comes only after
# this many more unseen modules, doubling up to _MOST_SKIPPED_WALKS; one that finds something
# walks at once again. A module named after its class meanwhile (one added to the model, say) is
# looked for again at the next _RECHECKS calls of its model at top level (recheck_pending):
# by then a module made by a forward is gone.
_MOST_SKIPPED_WALKS = 1024
_RECHECKS = 3


class LayerRegistry:
    """id(module) -> ModuleInfo; an entry disappears when its module is garbage collected."""

    def __init__(self):
        self._infos = {}
        self._refs = {}
        self._walks_to_skip = {}  # id(root) -> [unseen modules before the next walk, backoff]
        self._pending = {}  # id(module) -> [id(root), rechecks left]: named while walks were skipped
        # Models of one class called at top level side by side (a GAN's two nn.Sequential, a
        # teacher and a student) gave their layers the same names, their rows merged: the first
        # live one of a class names its layers as before; a live one of another architecture
        # puts "CLASS-N." in front. One of the same architecture (a model made anew in a
        # notebook, the old one kept alive by the cell's output history) shares the names.
        self._root_numbers = {}  # class name -> {N: (WeakSet of the models named so, their architecture)}
        self._root_number_of = {}  # id(model) -> (class name, N)
        self.get_by_id = self._infos.get  # hot path: registry.get_by_id(id(module))

    def ignore_parametrization(self, module):
        """Marks a parametrization not seen yet (is_parametrization: one registered, or called
        before any model holding it) and the modules below it as ignored."""
        for below in module.modules():
            info = self._infos.get(id(below)) or self._add(below, class_name(below), provisional=True)
            info.ignored = True

    def describe(self, module, top_level_module=None):
        """Slow path for a module not seen yet; names the whole tree of the top-level module
        (not each time: a module its forward makes anew is in no tree, see _MOST_SKIPPED_WALKS)."""
        walked = top_level_module is None or self._walk_unless_fruitless(top_level_module, module)
        info = self._infos.get(id(module))
        if info is None:
            info = self._add(module, class_name(module), provisional=True)
            if not walked:
                self._pending[id(module)] = [id(top_level_module), _RECHECKS]
        return info

    def recheck_pending(self, root):
        """At a call of root at top level: walks its tree once if a module named while walks
        were skipped is still there to be named (each is looked for _RECHECKS times at most)."""
        if not self._pending:
            return
        root_id = id(root)
        waiting = [key for key, (root_of, _) in self._pending.items() if root_of == root_id]
        if not waiting:
            return
        self._name_tree(root)
        for key in waiting:
            entry = self._pending.get(key)
            info = self._infos.get(key)
            if entry is not None:
                entry[1] -= 1
                if info is None or not info.provisional or entry[1] <= 0:
                    del self._pending[key]

    def _walk_unless_fruitless(self, root, module):
        """Walks root's tree to name module, unless walks that found nothing back off; whether it walked."""
        skip = self._walks_to_skip.get(id(root))
        if skip is not None and skip[0] > 0:
            skip[0] -= 1
            return False
        if self._name_tree(root) or id(module) in self._infos:
            self._walks_to_skip.pop(id(root), None)
        else:
            backoff = min(2 * skip[1], _MOST_SKIPPED_WALKS) if skip is not None else 1
            self._walks_to_skip[id(root)] = [backoff, backoff]
        return True

    def _root_label(self, root):
        """The name root's layers take theirs after: its class name, or "CLASS-N" where live
        models of its class but of other architectures were named first (the lowest N free)."""
        cls = class_name(root)
        held = self._root_number_of.get(id(root))
        if held is None:
            for below in root.modules():  # (models inside it, called first on their own, are no models now)
                if below is not root:
                    self._release_root_number(below)
            numbers = self._root_numbers.setdefault(cls, {})
            shape = architecture(root)
            n = next((n for n, (models, other) in sorted(numbers.items()) if models and other == shape), None)
            if n is None:
                n = 1
                while n in numbers and numbers[n][0]:
                    n += 1
                numbers[n] = (weakref.WeakSet(), shape)
            numbers[n][0].add(root)
            self._root_number_of[id(root)] = held = (cls, n)
        return cls if held[1] == 1 else f"{cls}-{held[1]}"

    def _release_root_number(self, module):
        """A model found inside another one's tree is no model of its own any more."""
        held = self._root_number_of.pop(id(module), None)
        if held is not None:
            self._root_numbers[held[0]][held[1]][0].discard(module)

    def _name_tree(self, root):
        """Names the modules of root's tree; returns how many it named or renamed."""
        root_id = id(root)
        root_name = self._root_label(root)
        numbered = root_name != class_name(root)
        walked = set()  # named_modules() walks a module before the modules below it
        named = 0
        ignored = set()  # the modules of parametrizations below root
        for name, module in root.named_modules():
            if is_parametrization(module):
                ignored.update(id(below) for below in module.modules())
            if name and self._root_number_of:
                self._release_root_number(module)
            info = self._infos.get(id(module))
            if info is None or (name and (info.provisional or (info.root != root_id and info.root in walked))):
                if name[:1].isdigit() or (numbered and name):
                    name = f"{root_name}.{name}"
                info = self._add(module, name or root_name, provisional=not name, root=root_id,
                                 called_at_top_level=info is not None and info.called_at_top_level)
                named += 1
            if id(module) in ignored:
                info.ignored = True
            walked.add(id(module))
        return named

    def _add(self, module, name, provisional, root=None, called_at_top_level=False):
        info = ModuleInfo(name, class_name(module), is_leaf_module(module), provisional, root,
                          called_at_top_level)
        key = id(module)
        infos, refs, walks_to_skip, pending = self._infos, self._refs, self._walks_to_skip, self._pending
        root_number_of = self._root_number_of

        def forget(_ref):  # runs when the module is freed, before its id can be reused
            infos.pop(key, None)
            refs.pop(key, None)
            walks_to_skip.pop(key, None)
            pending.pop(key, None)
            root_number_of.pop(key, None)  # (its number's WeakSet lets it go by itself)

        infos[key] = info
        if key not in refs:
            refs[key] = weakref.ref(module, forget)
        return info
