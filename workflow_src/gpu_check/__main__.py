"""`python3 -m workflow_src.gpu_check --config config.yaml --out DIR [--deadline SECONDS]`: the GPU
check (see the package docstring); writes DIR/gpu_check.json and DIR/gpu_check.md as it goes,
exits 1 if a check failed or the deadline left something unchecked.

--config takes a YAML file (PyYAML needed), a JSON file, or a JSON object (what the Snakemake rule
passes). A bare GPU machine may lack PyYAML: there, give the JSON that
`python -m workflow_src.gpu_check export-config config.yaml OUT.json` writes where PyYAML is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from workflow_src.atomic import described, exit_without_teardown, write_text
from workflow_src.config_check import read_checked
from workflow_src.gpu_check.report import CHECKS, refused


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["export-config"]:
        exporting = argparse.ArgumentParser(
            prog="python -m workflow_src.gpu_check export-config",
            description="the config as JSON, checked, for a machine without PyYAML",
        )
        exporting.add_argument("source", help="the config file (YAML)")
        exporting.add_argument("target", type=Path, help="the JSON file to write")
        args = exporting.parse_args(argv[1:])
        write_text(args.target, json.dumps(read_checked(args.source), indent=1) + "\n")
        return 0
    parser = argparse.ArgumentParser(prog="python -m workflow_src.gpu_check", description=described(__doc__))
    parser.add_argument("--config", required=True, help="config file (YAML or JSON) or a JSON object")
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu_check.json and gpu_check.md")
    parser.add_argument(
        "--deadline",
        type=float,
        help="seconds from the start: stop before them, with the report naming what was not reached",
    )
    parser.add_argument(
        "--compile",
        choices=("configured", "graphs", "all"),
        default="configured",
        help="check train.compile's configured mode (nothing when it is off); that and graphs (the whole "
        "step captured, against eager); or every mode",
    )
    parser.add_argument(
        "--sharing-jobs",
        type=int,
        help="processes sharing the device in the sharing measurement "
        "(default: gpu.jobs_per_device, or 3 where that is 1)",
    )
    parser.add_argument(
        "--checks",
        nargs="+",
        choices=CHECKS,
        default=CHECKS,
        help="the kinds of check to run (default: all); e.g. `--checks compile --compile graphs` for "
        "the graphs against eager alone",
    )
    parser.add_argument("--families", nargs="*", help="only the families whose names contain one of these")
    parser.add_argument(
        "--workers",
        type=int,
        help="CPU processes computing the references beside the device "
        "(default: the CPUs but 2, at most 12, on CUDA; none on the CPU)",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads of this process (default: torch's)")
    args = parser.parse_args(argv)
    if why := refused(args.checks):
        parser.error(why)

    import torch

    from workflow_src import gpu_check
    from workflow_src.gpu_check.families import families, selected
    from workflow_src.model.gpu import job_device

    config = read_checked(args.config)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        selected(families(config), args.families)
    except ValueError as err:
        parser.error(str(err))
    with job_device(config["train"]["device"]) as device:
        report = gpu_check.run(
            config,
            device,
            args.out,
            deadline=args.deadline,
            only=args.families,
            compile_modes=args.compile,
            sharing_jobs=args.sharing_jobs,
            workers=args.workers,
            checks=tuple(args.checks),
            log=lambda line: print(line, flush=True),
        )
    return 0 if report.data["passed"] else 1


if __name__ == "__main__":
    exit_without_teardown(main())
