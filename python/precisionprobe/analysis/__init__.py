"""Answers without writing SQL: the commands `precisionprobe analyze` and `compare`, and the same
numbers for a monitoring stack: `export` and `serve`.

  extension.py        finds and loads the SQLite extension (PRECISIONPROBE_EXTENSION, the
                      package's own copy, or a build of the repository)
  refresh.py          opens a run's results database and brings it up to date (pp_refresh),
                      progress on stderr
  write_lock.py       waits for the results database's write lock (another analyze, a
                      scheduler's refresh) before a refresh or a save writes
  ctrl_c.py           Ctrl-C or SIGTERM during a refresh: interrupts the statement running in C
  emulate.py          --emulate: a run's layer calls replayed on emulated GPUs, served by a
                      loopback Prometheus
  saved_estimates.py  saves the estimator's results as the plain table report_estimates
  report.py           reads the report from the plain report_* tables: per layer type and per
                      layer the best number available for each metric, and the job's totals
  findings.py         plain sentences from those numbers, and what could not be resolved and
                      what would resolve it
  render.py           the report as a terminal table, CSV, JSON or Markdown
  figures.py          its figures (matplotlib): share of GPU time, each metric per layer type
  html_report.py      the self-contained report page of --html
  compare.py          two reports side by side: differences and whether they exceed the uncertainty
  openmetrics.py      the per-layer-type profile as OpenMetrics text: the series, their names,
                      labels, units and HELP (export writes it, serve answers scrapes with it)
  serve.py            the HTTP /metrics endpoint and its refresh thread
  run_database.py     the results database a subcommand reads: where it is, checked before
                      SQLite opens it, refreshed first, its reports read
  command_error.py    the error a subcommand prints as one line
  cli.py              the subcommands' arguments and their one-line errors
"""
