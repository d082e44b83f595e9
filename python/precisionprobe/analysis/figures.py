"""The report's figures (matplotlib, PNG): where the GPU time goes per layer type, and each
activity metric per layer type and direction with what kind of number it is.

An identified estimate is a solid bar with its 90% interval; an interval without an identified
value is drawn as a floating bar spanning it; a blend is a hatched, pale bar (the overlap mean
of its sample windows, not the layer's own value).
"""
from .render import shown
from .report import METRICS

DPI = 110
SHORT_DIRECTION = {"forward": "fwd", "backward": "bwd"}


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("needs matplotlib (Debian: apt install python3-matplotlib; pip install matplotlib)") \
            from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def check_matplotlib():
    """Raises RuntimeError saying how to install matplotlib when it cannot be imported: asked
    before a refresh, so that --html fails before the work, not after the report."""
    _pyplot()


def _plain(text):
    """A name from event files as a figure shows it: control characters written out (as on the
    terminal; the fonts have no glyph for them), and '$' as itself, where matplotlib would read
    the text between two of them as math and fail on what it cannot parse."""
    return shown(text).replace("$", r"\$")


def _label(row):
    return _plain(row.name) if row.direction == "untracked" else f"{_plain(row.name)} {SHORT_DIRECTION[row.direction]}"


def share_figure(job, path):
    """Horizontal bars: each layer type and direction's share of the job's GPU time, as a PNG
    written to path (a file name, or a binary file open for writing)."""
    plt = _pyplot()
    rows = list(reversed(job.layer_types))
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.2))
    ax.barh([_label(r) for r in rows], [100 * r.share for r in rows], color="#4477aa")
    for y, r in enumerate(rows):
        ax.text(100 * r.share, y, f" {100 * r.share:.1f}%", va="center", fontsize=8)
    ax.set_xlabel("share of the job's GPU time (%)")
    ax.set_title(f"Where the GPU time goes: {_plain(job.job_id)}", fontsize=10)
    ax.set_xlim(0, max(100 * r.share for r in rows) * 1.18 + 1)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
    plt.close(fig)


def metrics_figure(job, path):
    """One panel per activity metric: the best value per layer type and direction, as a PNG
    written to path (a file name, or a binary file open for writing)."""
    plt = _pyplot()
    rows = [r for r in job.layer_types if r.direction != "untracked"]
    fig, axes = plt.subplots(len(METRICS), 1, figsize=(10, 2.3 * len(METRICS)), sharex=True)
    xs = range(len(rows))
    for ax, (_, short, label) in zip(axes, METRICS):
        for x, row in zip(xs, rows):
            v = row.metrics[short]
            if v.kind == "estimate":
                ax.bar(x, v.value, 0.6, color="#228833",
                       yerr=[[v.value - v.lower90], [v.upper90 - v.value]], capsize=3)
            elif v.kind == "interval":
                ax.bar(x, v.upper90 - v.lower90, 0.6, bottom=v.lower90, color="#ccbb44", edgecolor="#997700")
            elif v.kind == "blend":
                ax.bar(x, v.value, 0.6, color="#bbbbbb", hatch="//", edgecolor="#777777", alpha=0.6)
        ax.set_ylabel(label, fontsize=8)
        ax.tick_params(labelsize=8)
    axes[-1].set_xticks(list(xs), [_label(r) for r in rows], rotation=30, ha="right", fontsize=8)
    axes[0].set_title(f"Per layer type, {_plain(job.job_id)}: green identified (90% interval), yellow "
                      "interval only, grey hatched blend of the sample window", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
    plt.close(fig)
