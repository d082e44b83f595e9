"""precisionprobe.attach()/detach() in a running process, as in a notebook."""
import threading

import pytest
import torch
from torch import nn

from conftest import read_records


def train(model, steps, seed=0):
    torch.manual_seed(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(steps):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def mlp():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))


def test_attach_records_layers_until_detach(tmp_path, fresh_probe, capsys):
    model = mlp()
    probe = fresh_probe.attach(job_id="notebook", out=tmp_path)
    assert fresh_probe.attach() is probe  # attaching twice keeps the first probe
    train(model, steps=2)
    written, dropped = fresh_probe.detach()
    assert (written, dropped) == (2 * 2 * 4, 0)  # 2 steps x (3 layers + MSELoss) x 2 directions
    assert f"precisionprobe: wrote {written} events, dropped 0" in capsys.readouterr().err

    headers, events = read_records(tmp_path)
    assert [h["job_id"] for h in headers] == ["notebook"]
    assert {e["job_id"] for e in events} == {"notebook"}
    assert [(e["layer"], e["forward"]) for e in events if e["batch"] == 1] == [
        ("Sequential.0", True), ("Sequential.1", True), ("Sequential.2", True), ("MSELoss", True),
        ("MSELoss", False), ("Sequential.2", False), ("Sequential.1", False), ("Sequential.0", False)]

    train(model, steps=1)  # detached: nothing more is written
    assert len(read_records(tmp_path)[1]) == len(events)


def test_loss_module_outside_the_model_is_named_after_its_class(tmp_path, fresh_probe):
    fresh_probe.attach(out=tmp_path)
    train(mlp(), steps=1)
    fresh_probe.detach()
    assert "MSELoss" in {e["layer"] for e in read_records(tmp_path)[1]}


def test_modules_whose_output_needs_no_grad_have_no_backward_event(tmp_path, fresh_probe):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Identity(), nn.Linear(8, 1))
    model[0].requires_grad_(False)  # frozen first layer, and the input needs no grad either
    fresh_probe.attach(out=tmp_path)
    model(torch.randn(2, 4)).sum().backward()
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    assert [e["layer"] for e in events if e["forward"]] == ["Sequential.0", "Sequential.1", "Sequential.2", "Sequential.3"]
    # Sequential.0 and .1: no grad flows into them. .2 (Identity) returns its input: no work of its own.
    assert [e["layer"] for e in events if not e["forward"]] == ["Sequential.3"]


def test_inference_under_no_grad_gives_forward_events_one_batch_per_call(tmp_path, fresh_probe):
    model = mlp()
    fresh_probe.attach(out=tmp_path)
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(2, 4))
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    assert all(e["forward"] for e in events)
    assert [e["batch"] for e in events] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_layer_names_are_paths_in_the_model(tmp_path, fresh_probe):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
            self.head = nn.Linear(4, 1)

        def forward(self, x):
            return self.head(self.encoder(x))

    fresh_probe.attach(out=tmp_path)
    Net()(torch.randn(1, 4))
    fresh_probe.detach()
    assert [e["layer"] for e in read_records(tmp_path)[1]] == ["encoder.0", "encoder.1", "head"]



def test_a_block_run_alone_before_its_model_takes_its_path_in_the_model(tmp_path, fresh_probe):
    # A model that runs a block in __init__ to learn its output size; under the launcher the
    # probe is attached before any model is built. The block's layers were named as if it were
    # the model ("Sequential.0") for the whole job, and two blocks so run gave their layers the
    # same names. From the model's first call on, they are its paths.
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())
            with torch.no_grad():
                size = self.features(torch.zeros(1, 1, 6, 6)).numel()
                self.head = nn.Sequential(nn.Linear(size, 4), nn.ReLU())
                self.head(torch.zeros(1, size))  # (the same names, were the sizes not known)
            self.out = nn.Linear(4, 1)

        def forward(self, x):
            return self.out(self.head(self.features(x).flatten(1)))

    fresh_probe.attach(out=tmp_path)
    model = Net()
    model(torch.randn(2, 1, 6, 6)).sum().backward()
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    assert [e["layer"] for e in events if e["batch"] == 0] == [  # before the model ran: two models
        "Sequential.0", "Sequential.1", "Sequential-2.0", "Sequential-2.1"]
    assert [(e["layer"], e["forward"]) for e in events if e["batch"] == 1] == [
        ("features.0", True), ("features.1", True), ("head.0", True), ("head.1", True), ("out", True),
        ("out", False), ("head.1", False), ("head.0", False), ("features.1", False), ("features.0", False)]

def test_backward_run_twice_gives_two_backward_events(tmp_path, fresh_probe):
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    fresh_probe.attach(out=tmp_path)
    loss = model(torch.randn(2, 3)).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    fresh_probe.detach()
    assert [(e["layer"], e["forward"]) for e in read_records(tmp_path)[1]] == [
        ("Sequential.0", True), ("Sequential.1", True), ("Sequential.1", False), ("Sequential.0", False), ("Sequential.1", False), ("Sequential.0", False)]


def test_a_backward_pass_that_raises_does_not_stop_batch_counting(tmp_path, fresh_probe):
    model = mlp()
    fresh_probe.attach(out=tmp_path)
    output = model(torch.randn(2, 4))

    def fail(grad):
        raise RuntimeError("simulated failure inside backward")

    output.register_hook(fail)
    try:
        output.sum().backward()
    except RuntimeError:
        pass
    train(model, steps=2)
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    assert sorted({e["batch"] for e in events}) == [0, 1, 2]
    for batch in (1, 2):  # the steps after the failure are timed as usual
        assert [e["layer"] for e in events if e["batch"] == batch and not e["forward"]] == [
            "MSELoss", "Sequential.2", "Sequential.1", "Sequential.0"]


def test_a_model_call_that_raises_at_top_level_does_not_stop_batch_counting(tmp_path, fresh_probe):
    """The out-of-memory retry: a step's forward raises, the loop catches it and runs the step
    again smaller. No post-hook ends the call that raised; the next call of the model starts a
    step as before (not one nested in it), and so do the steps and evaluation after it."""
    model = mlp()
    fresh_probe.attach(out=tmp_path)
    train(model, steps=1)

    def out_of_memory(module, inputs, output):
        raise RuntimeError("CUDA out of memory (simulated)")

    handle = model[1].register_forward_hook(out_of_memory)
    try:
        model(torch.randn(64, 4))
    except RuntimeError:
        pass
    handle.remove()
    train(model, steps=2)
    with torch.no_grad():
        model(torch.randn(2, 4))
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    assert sorted({e["batch"] for e in events}) == [0, 1, 2, 3]
    for batch in (1, 2):  # the retried step (with the call that raised), and the next one
        assert [e["layer"] for e in events if e["batch"] == batch and not e["forward"]] == [
            "MSELoss", "Sequential.2", "Sequential.1", "Sequential.0"]
    assert [e["layer"] for e in events if e["batch"] == 3] == ["Sequential.0", "Sequential.1", "Sequential.2"]


@pytest.mark.parametrize("arguments, message", [
    ({"job_id": 5}, "attach: argument 'job_id' must be text, got int 5"),
    ({"job_id": "  "}, "attach: argument 'job_id' must not be empty or only white space (leave it out for the "
                       "default), got '  '"),
    ({"job_id": ""}, "attach: argument 'job_id' must not be empty or only white space"),
    ({"clock": "gpu"}, "attach: argument 'clock' must be one of auto, cpu, cuda, got 'gpu'"),
    ({"clock": "CUDA"}, "argument 'clock'"),
    ({"summary": "quiet"}, "attach: argument 'summary' must be one of always, auto, never, got 'quiet'"),
    ({"flush_interval": 0}, "attach: argument 'flush_interval' must be a number of seconds above 0"),
    ({"flush_interval": -1}, "argument 'flush_interval'"),
    ({"flush_interval": float("nan")}, "argument 'flush_interval'"),
    ({"flush_interval": "0.2"}, "argument 'flush_interval'"),
    ({"flush_interval": 1e20}, "argument 'flush_interval'"),
    ({"event_format": "csv"}, "attach: argument 'event_format' must be one of compact, json, got 'csv'"),
    ({"event_format": 5}, "attach: argument 'event_format' must be text, got int 5"),
])
def test_an_argument_attach_cannot_use_is_refused_before_anything_is_installed(tmp_path, fresh_probe, arguments,
                                                                                message):
    # Before, each of these attached: a numeric job id wrote a header whose events every reader
    # skips, a clock or summary outside the choices fell to another silently, and a flush
    # interval of 0 or less kept the writer thread spinning on a core.
    with pytest.raises((TypeError, ValueError)) as raised:
        fresh_probe.attach(out=tmp_path, **arguments)
    assert message in str(raised.value)
    assert fresh_probe.active_probe() is None
    train(mlp(), steps=1)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("out, message", [
    # An empty out was taken as not given: job_id '../escape' then wrote outside runs/.
    ("", "attach: argument 'out' must not be empty (leave it out for runs/<job id>)"),
    (123, "attach: argument 'out' must be a folder's path as text, got int 123"),
    (b"/tmp/x", "attach: argument 'out' must be a folder's path as text, not bytes"),
    # It attached, then lost its events with an internal error that counted none of them.
    ("a\0b", "attach: argument 'out' must not hold a NUL byte"),
])
def test_an_output_folder_attach_cannot_use_is_refused_naming_it(tmp_path, fresh_probe, monkeypatch, out, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises((TypeError, ValueError)) as raised:
        fresh_probe.attach(job_id="../escape", out=out)
    assert message in str(raised.value)
    assert fresh_probe.active_probe() is None
    train(mlp(), steps=1)
    assert not list(tmp_path.iterdir()) and not (tmp_path.parent / "escape").exists()


def test_a_job_id_of_white_space_from_the_environment_is_refused_naming_the_variable(tmp_path, fresh_probe,
                                                                                       monkeypatch):
    # Before, it recorded a job every table showed as a blank row, which --job-id '  ' refuses.
    monkeypatch.setenv("PRECISIONPROBE_JOB_ID", " \t")
    with pytest.raises(ValueError) as raised:
        fresh_probe.attach(out=tmp_path)
    assert ("attach: environment variable PRECISIONPROBE_JOB_ID holds only white space (' \\t'); give it a job id, "
            "or unset it for the default") in str(raised.value)
    assert fresh_probe.active_probe() is None
    monkeypatch.setenv("PRECISIONPROBE_JOB_ID", "")  # empty is unset: the default id
    assert fresh_probe.attach(out=tmp_path).identity.job_id.startswith("job-")
    fresh_probe.detach()


def test_an_event_format_from_the_environment_that_cannot_be_used_is_refused_naming_the_variable(tmp_path, fresh_probe,
                                                                                                 monkeypatch):
    monkeypatch.setenv("PRECISIONPROBE_EVENT_FORMAT", "xml")
    with pytest.raises(ValueError) as raised:
        fresh_probe.attach(out=tmp_path)
    assert str(raised.value) == ("attach: environment variable PRECISIONPROBE_EVENT_FORMAT is 'xml', not one of "
                                 "compact, json (unset it for the default, compact)")
    assert fresh_probe.active_probe() is None


@pytest.mark.parametrize("job_id", ["../../elsewhere", "/tmp", "..", "."])
def test_a_job_id_that_would_put_the_default_out_outside_runs_is_refused(tmp_path, fresh_probe, monkeypatch, job_id):
    # Without out, the events go to runs/<job id>: before, '../../elsewhere' wrote them two
    # folders above runs/, '/tmp' into /tmp, '..' and '.' among other jobs' files.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as raised:
        fresh_probe.attach(job_id=job_id)
    assert str(raised.value).startswith(f"attach: argument 'job_id': {job_id!r}: the default output directory "
                                        "runs/<job id> would be ")
    assert str(raised.value).endswith("not a folder inside runs/; pass out=DIR")
    monkeypatch.setenv("PRECISIONPROBE_JOB_ID", job_id)
    with pytest.raises(ValueError, match="attach: environment variable PRECISIONPROBE_JOB_ID: "):
        fresh_probe.attach()
    assert fresh_probe.active_probe() is None
    # With out given, the job id is only a name.
    assert fresh_probe.attach(job_id=job_id, out=tmp_path / "events").identity.job_id == job_id
    fresh_probe.detach()


def test_two_threads_training_at_once_write_the_header_before_any_event(tmp_path, fresh_probe):
    # Two models trained on two threads of one process. The first top-level call writes the job
    # header, and counting a large model's parameters for it takes a while: the other thread's
    # events must not be queued ahead of it (a compact file's events take their job from the
    # header, and every reader skips those before it). Here counting waits until the other
    # thread has trained a step, or one second where the probe rightly makes that thread wait.
    counting, second_trained = threading.Event(), threading.Event()

    class SlowToCount(nn.Sequential):
        def parameters(self, recurse=True):
            counting.set()
            second_trained.wait(timeout=1)
            return super().parameters(recurse)

    first, second = SlowToCount(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)), mlp()
    fresh_probe.attach(job_id="threads", out=tmp_path, summary="never")
    thread = threading.Thread(target=lambda: first(torch.randn(2, 4)).sum().backward())
    thread.start()
    counting.wait()
    train(second, steps=1)
    second_trained.set()
    thread.join()
    assert fresh_probe.detach() == (2 * 3 + 2 * 4, 0)
    headers, events = read_records(tmp_path)
    assert [(h["job_id"], h["model"], h["parameters"]) for h in headers] == [("threads", "SlowToCount", 97)]
    assert sorted((e["layer"], e["forward"]) for e in events) == sorted(
        [(f"{name}.{i}", forward) for name in ("SlowToCount", "Sequential") for i in range(3)
         for forward in (True, False)] + [("MSELoss", True), ("MSELoss", False)])


def test_a_model_traced_by_torch_jit_first_does_not_disable_the_hooks(tmp_path, fresh_probe, capsys):
    # Tracing a model (for export) as its first call: while tracing, sizes are traced tensors,
    # and a parameter count made of them once ended the hooks ("Object of type Tensor is not
    # JSON serializable") for the rest of the job.
    model = mlp()
    fresh_probe.attach(job_id="traced", out=tmp_path, summary="never")
    traced = torch.jit.trace(model, torch.randn(2, 4))
    train(model, steps=1)
    fresh_probe.detach()
    assert "precisionprobe" not in capsys.readouterr().err
    headers, events = read_records(tmp_path)
    assert [(h["model"], h["parameters"]) for h in headers] == [("Sequential", 97)]
    assert isinstance(traced, torch.jit.ScriptModule)
    last = max(e["batch"] for e in events)
    assert [(e["layer"], e["forward"]) for e in events if e["batch"] == last] == [
        ("Sequential.0", True), ("Sequential.1", True), ("Sequential.2", True), ("MSELoss", True),
        ("MSELoss", False), ("Sequential.2", False), ("Sequential.1", False), ("Sequential.0", False)]


def test_a_torchscript_layer_is_named_and_typed_by_the_class_it_was_made_from(tmp_path, fresh_probe):
    # Every scripted module's class is RecursiveScriptModule (traced: TopLevelTracedModule): the
    # layer type said so, and two scripted layers run on their own had one name. The modules a
    # scripted module runs inside TorchScript call no hooks: a scripted block is one layer.
    model = nn.Sequential(torch.jit.script(nn.Linear(4, 4)), nn.ReLU(),
                          torch.jit.script(nn.Sequential(nn.Linear(4, 4))), nn.Linear(4, 1))
    scripted, traced = torch.jit.script(nn.Tanh()), torch.jit.trace(nn.Sigmoid(), torch.randn(1, 1))
    fresh_probe.attach(out=tmp_path)
    model(torch.randn(2, 4)).sum().backward()
    scripted(traced(torch.randn(2, 1)))
    fresh_probe.detach()
    assert [(e["layer"], e["layer_type"], e["forward"]) for e in read_records(tmp_path)[1]] == [
        ("Sequential.0", "Linear", True), ("Sequential.1", "ReLU", True), ("Sequential.2", "Sequential", True),
        ("Sequential.3", "Linear", True), ("Sequential.3", "Linear", False), ("Sequential.2", "Sequential", False),
        ("Sequential.1", "ReLU", False), ("Sequential.0", "Linear", False), ("Sigmoid", "Sigmoid", True),
        ("Tanh", "Tanh", True)]


def test_a_module_that_calls_none_of_its_children_is_a_layer(tmp_path, fresh_probe):
    # nn.MultiheadAttention holds out_proj but uses its weights itself: counted as a container,
    # the attention of every nn.Transformer gave no event, its time untracked. A module with
    # children is a layer for each call in which no module call starts, on any thread.
    torch.manual_seed(0)
    model = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    fresh_probe.attach(out=tmp_path)
    for _ in range(2):
        model(torch.randn(2, 3, 8)).sum().backward()
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    for batch in (0, 1):
        assert [(e["layer"], e["layer_type"]) for e in events if e["batch"] == batch and e["forward"]] == [
            ("self_attn", "MultiheadAttention"), ("dropout1", "Dropout"), ("norm1", "LayerNorm"),
            ("linear1", "Linear"), ("dropout", "Dropout"), ("linear2", "Linear"), ("dropout2", "Dropout"),
            ("norm2", "LayerNorm")]
        assert [e["layer"] for e in events if e["batch"] == batch and not e["forward"]] == [
            "norm2", "linear2", "linear1", "norm1", "self_attn"]  # (dropouts of p=0 return their input)
    spans = sorted((e["t_start_ns"], e["t_end_ns"]) for e in events if e["forward"])
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))  # none inside another


def test_a_module_that_calls_its_children_only_sometimes_is_a_layer_when_it_does_not(tmp_path, fresh_probe):
    # A module was marked a container for good once a call of it had called a child: then, after
    # training, nn.TransformerEncoderLayer's fast path in eval (fused kernels, no child module
    # called) gave no event at all, and evaluation's time went untracked.
    torch.manual_seed(0)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
    fresh_probe.attach(out=tmp_path)
    model(torch.randn(2, 3, 8)).sum().backward()
    model.eval()
    with torch.no_grad():
        model(torch.randn(2, 3, 8))
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    assert ("layers.0.self_attn", "MultiheadAttention") in {(e["layer"], e["layer_type"]) for e in events
                                                             if e["batch"] == 0}
    assert [(e["layer"], e["layer_type"]) for e in events if e["batch"] == 1] == [
        ("layers.0", "TransformerEncoderLayer"), ("layers.1", "TransformerEncoderLayer")]


def test_modules_a_forward_makes_as_it_runs_do_not_walk_the_model_each_time(tmp_path, fresh_probe):
    # `nn.ReLU()(x)` in a forward is a module not seen yet at every call, and in no model's tree:
    # the probe walked the whole model for each, a step of a 3,000-module model 200 times slower.
    # The walks back off while they find nothing; a module added to the model is still named by
    # its path once the next walk comes.
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.unused = nn.ModuleList(nn.Linear(1, 1) for _ in range(50))

        def forward(self, x):
            return nn.ReLU()(self.fc(x))

    model = Net()
    walks = 0
    named_modules = model.named_modules

    def counted(*args, **kwargs):
        nonlocal walks
        walks += 1
        return named_modules(*args, **kwargs)
    model.named_modules = counted
    fresh_probe.attach(out=tmp_path)
    with torch.no_grad():
        for _ in range(2000):
            model(torch.randn(1, 4))
        # 1 + 1 + 2 + 4 + ... up to 1024 unseen modules apart, and the model's architecture once: not 2,000
        assert walks <= 15, walks
        model.added = nn.Linear(4, 4)
        model.forward = lambda x: model.added(nn.ReLU()(model.fc(x)))
        for _ in range(1100):
            model(torch.randn(1, 4))
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    # (the first call of the added layer may come while walks are skipped: under its class name
    # in that step at most, and by its path from the next call of the model on)
    assert {e["layer"] for e in events if e["batch"] >= 2001} == {"fc", "ReLU", "added"}
    assert [e["layer"] for e in events if e["batch"] == 3099] == ["fc", "ReLU", "added"]


def test_a_parametrized_layer_is_one_layer_and_its_parametrization_no_event(tmp_path, fresh_probe):
    # spectral_norm(nn.Conv2d): the convolution computes its weight by calling its parametrization
    # as a module, so it counted as a container and gave no event (its time went untracked),
    # while the parametrization's call did; registering it called it at top level, which became
    # the job's model in the header (ParametrizationList, 1,728 parameters).
    import torch.nn.utils.parametrize as parametrize
    from torch.nn.utils.parametrizations import spectral_norm

    class Symmetric(nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

    class Halved(nn.Module):
        def forward(self, x):
            return x * 0.5

    torch.manual_seed(0)
    fresh_probe.attach(out=tmp_path)
    model = nn.Sequential(spectral_norm(nn.Conv2d(1, 2, 3)), nn.Flatten(), nn.Linear(8, 8), nn.ReLU())
    for step in range(3):
        if step == 1:  # registered while training: the layer was seen, unparametrized, before
            parametrize.register_parametrization(model[2], "weight", Symmetric())
            # A second one on the same tensor, which registering calls at top level itself.
            parametrize.register_parametrization(model[2], "weight", Halved())
        model(torch.randn(2, 1, 4, 4)).sum().backward()
    fresh_probe.detach()
    headers, events = read_records(tmp_path)
    assert (headers[0]["model"], headers[0]["parameters"]) == ("Sequential", sum(
        p.numel() for p in model.parameters()))
    for batch in range(3):
        assert [(e["layer"], e["layer_type"]) for e in events if e["batch"] == batch and e["forward"]] == [
            ("Sequential.0", "Conv2d"), ("Sequential.1", "Flatten"), ("Sequential.2", "Linear"),
            ("Sequential.3", "ReLU")]
        assert [e["layer"] for e in events if e["batch"] == batch and not e["forward"]] == [
            "Sequential.3", "Sequential.2", "Sequential.1", "Sequential.0"]


def test_two_models_of_one_class_side_by_side_keep_their_layers_apart(tmp_path, fresh_probe):
    # A GAN's generator and discriminator, both nn.Sequential: their layers had the same names
    # (Sequential.0, ...), so the two models' rows were one. The first live model of a class
    # names its layers as before; a live one of another architecture puts "CLASS-2." in front.
    # One made anew of the same architecture (a notebook's second trial, the first kept alive by
    # the cell's output history) shares the names, as one made after the first was freed does.
    torch.manual_seed(0)
    fresh_probe.attach(out=tmp_path)
    generator = nn.Sequential(nn.Linear(2, 4), nn.ReLU())
    discriminator = nn.Sequential(nn.Linear(4, 1))
    discriminator(generator(torch.randn(3, 2))).sum().backward()
    output_history = [generator]
    again = nn.Sequential(nn.Linear(2, 4), nn.ReLU())
    again(torch.randn(3, 2)).sum().backward()
    del generator, discriminator, output_history, again
    # A block run on its own to learn a size, then put into the one model: that model is the
    # only one, and names its layers unnumbered (the block's number went with it into the model).
    block = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    size = block(torch.zeros(1, 4)).numel()
    whole = nn.Sequential(block, nn.Linear(size, 1))
    whole(torch.randn(2, 4)).sum().backward()
    del block, whole
    afresh = nn.Sequential(nn.Linear(4, 1))  # (the discriminator's architecture, its model freed)
    afresh(torch.randn(3, 4)).sum().backward()
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    assert [(e["layer"], e["layer_type"]) for e in events if e["forward"]] == [
        ("Sequential.0", "Linear"), ("Sequential.1", "ReLU"), ("Sequential-2.0", "Linear"),
        ("Sequential.0", "Linear"), ("Sequential.1", "ReLU"),
        ("Sequential.0", "Linear"), ("Sequential.1", "ReLU"),  # (the block on its own)
        ("Sequential.0.0", "Linear"), ("Sequential.0.1", "ReLU"), ("Sequential.1", "Linear"),
        ("Sequential.0", "Linear")]


def test_a_module_without_children_that_calls_one_is_one_layer(tmp_path, fresh_probe):
    # A head keeping its activation in a plain dict (not registered: no children) gave an event
    # around the activation's own event, the activation's time counted twice. The module it calls
    # is part of its call, as its own code is (dropping the head instead lost its own time).
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4, 4))
            self.__dict__["helpers"] = {"act": nn.GELU()}

        def forward(self, x):
            return self.helpers["act"](x @ self.weight)

    model = nn.Sequential(nn.Linear(4, 4), Head())
    fresh_probe.attach(out=tmp_path)
    model(torch.randn(2, 4)).sum().backward()
    model(torch.randn(2, 4)).sum().backward()
    fresh_probe.detach()
    events = read_records(tmp_path)[1]
    for batch in (0, 1):
        assert [(e["layer"], e["layer_type"], e["forward"]) for e in events if e["batch"] == batch] == [
            ("Sequential.0", "Linear", True), ("Sequential.1", "Head", True), ("Sequential.1", "Head", False),
            ("Sequential.0", "Linear", False)]


def test_a_model_traced_by_torch_fx_gives_no_event_for_the_trace(tmp_path, fresh_probe):
    # torch.fx.symbolic_trace calls the model with proxies, running nothing: that call was an
    # event, and the job's model in the header (the traced module's class, 0 parameters).
    import torch.fx

    class Weird(nn.Module):
        def forward(self, x):
            return {"a": x.relu(), "b": (x, x * 2)}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.weird = Weird()

        def forward(self, x):
            out = self.weird(self.fc(x))
            return out["a"] + out["b"][1]

    fresh_probe.attach(out=tmp_path)
    traced = torch.fx.symbolic_trace(Net())
    traced(torch.randn(2, 8)).sum().backward()
    fresh_probe.detach()
    headers, events = read_records(tmp_path)
    assert (headers[0]["model"], headers[0]["parameters"]) == ("Net", 72)  # (a GraphModule keeps its class name)
    assert [(e["layer"], e["forward"]) for e in events] == [("fc", True), ("fc", False)]
