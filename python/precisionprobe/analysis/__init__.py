"""Answers without writing SQL: the commands `precisionprobe analyze` and `compare`, and the same
numbers for a monitoring stack: `export` and `serve`.

  extension.py    finds and loads the SQLite extension (PRECISIONPROBE_EXTENSION, the package's own
                  copy, or a build of the repository)
  refresh.py      opens a run's results database and brings it up to date (pp_refresh), progress
                  on stderr
  report.py       reads the report from the database's views: per layer type and per layer the
                  best number available for each metric, and the job's totals
  findings.py     plain sentences from those numbers, and what could not be resolved and what
                  would resolve it
  render.py       the report as a terminal table, CSV, JSON or Markdown
  compare.py      two reports side by side: differences and whether they exceed the uncertainty
  openmetrics.py  the per-layer-type profile as OpenMetrics text: the series, their names, labels,
                  units and HELP (export writes it, serve answers scrapes with it)
  serve.py        the HTTP /metrics endpoint and its refresh thread
  cli.py          the subcommands' arguments and their one-line errors
"""
