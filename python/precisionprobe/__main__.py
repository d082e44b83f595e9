"""Command line (`precisionprobe`, or `python3 -m precisionprobe`):

  run [--out DIR] [--job-id ID] -- COMMAND...   record a training job's layer events
  analyze RUN_DIR [...]                         refresh its results and print the report
  compare RUN_A RUN_B [...]                     compare two analyzed runs
  export RUN_DIR --openmetrics FILE [...]       its per-layer-type profile as OpenMetrics
  serve RUN_DIR --port N [...]                  the same on an HTTP /metrics endpoint
"""
import argparse
import os
import sys

# As the user typed it: the console script, or the module.
PROG = "precisionprobe" if os.path.basename(sys.argv[0]) == "precisionprobe" else "python3 -m precisionprobe"


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description="Record PyTorch layer events of a training job, "
                                     "and tell where its GPU resources go, layer by layer.")
    from ._version import __version__
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a command with the probe attached",
                              description="Runs COMMAND with layer hooks installed in each of "
                                          "its Python processes; exits with COMMAND's status.")
    run.add_argument("--out", help="directory for events-<host>-<pid>.jsonl (default runs/<job id>)")
    run.add_argument("--job-id", help="job id written in every event (default "
                                      "$PRECISIONPROBE_JOB_ID or job-<date>-<time>-<pid>)")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    from .analysis import cli as analysis
    analysis.add_analyze(commands)
    analysis.add_compare(commands)
    analysis.add_export(commands)
    analysis.add_serve(commands)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said with the command's own usage, not the program's
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command != "run":
        return analysis.run(args, PROG)
    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not command:  # (each of these is said with run's usage, not the program's)
        run.error("missing COMMAND (put it after --)")
    from ._job_identity import is_blank_job_id, job_id_from_environment
    if args.job_id is not None and is_blank_job_id(args.job_id):
        run.error("--job-id: must not be empty or only white space (leave it out for the default)")
    from ._event_format import chosen_event_format
    try:  # (each process would fail to attach, and the job run unrecorded)
        chosen_event_format()
    except ValueError as error:
        run.error(f"{error}")
    from_environment = None
    if args.job_id is None:
        try:
            from_environment = job_id_from_environment()
        except ValueError as error:
            run.error(f"{error}")
    if args.out is not None and not args.out:
        run.error("--out: must not be empty (leave it out for runs/JOB_ID)")
    if args.out is not None and "\0" in args.out:
        run.error("--out: must not hold a NUL byte")
    if args.out is None:
        from ._probe import default_out_dir_problem
        job_id = args.job_id if args.job_id is not None else from_environment
        problem = job_id is not None and default_out_dir_problem(job_id)
        if problem:
            where = "--job-id" if args.job_id is not None else "environment variable PRECISIONPROBE_JOB_ID"
            run.error(f"{where}: {job_id!r}: {problem}; give --out DIR")
    from ._launcher import run as run_command
    return run_command(command, out=args.out, job_id=args.job_id)


if __name__ == "__main__":
    sys.exit(main())
