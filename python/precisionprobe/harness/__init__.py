"""precisionprobe harness: the servers and processes that tests, benches, docs and the main job run.

Everything listens on 127.0.0.1 and runs in its own session, so that it can be stopped with all
its children whatever happens to the caller. Prometheus, promtool and VictoriaMetrics are the
Debian packages (scripts/setup.sh installs them); nothing here needs a Python package beyond the
standard library.

  ports       free_port(), wait_ready(): a loopback port to listen on, and waiting until a
              server answers there;
  processes   start(), stop(), Processes: child processes in their own process groups, stopped
              with SIGTERM and then SIGKILL; child_environment() for child Pythons that run
              precisionprobe;
  prometheus  a recorded TSDB (promtool backfill of an OpenMetrics file, then served), or a live
              Prometheus scraping given targets (the DCGM emulator) every 100 ms;
  victoria    VictoriaMetrics fed through its import API.

It ships in the distribution, not in tests/, because `python3 -m precisionprobe` will use it to
run the emulator and a Prometheus for the user, as the main job does.
"""
