"""`python3 -m workflow_src.gpu_check --config config.yaml --out DIR`: the GPU check (see the
package docstring); writes DIR/gpu_check.json and DIR/gpu_check.md, exits 1 if a check failed.

--config takes a YAML file (PyYAML needed), a JSON file, or a JSON object (what the Snakemake rule
passes). A bare GPU machine may lack PyYAML: there, give the JSON that
`python -m workflow_src.gpu_check export-config config.yaml OUT.json` writes where PyYAML is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from workflow_src.atomic import write_text


def read_config(value: str) -> dict:
    if value.lstrip().startswith("{"):
        return json.loads(value)
    path = Path(value)
    if path.suffix == ".json":
        return json.loads(path.read_text())
    try:
        import yaml
    except ImportError:
        sys.exit(f"gpu_check: {path} is YAML and PyYAML is not installed here; on a machine with it run "
                 f"`python -m workflow_src.gpu_check export-config {path} {path.with_suffix('.json')}` and pass "
                 "the JSON file instead")
    return yaml.safe_load(path.read_text())


def cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def markdown(report: dict) -> str:
    p = report["precision"]
    verdict = "**passed**" if report["passed"] else f"**FAILED** ({len(report['failures'])} failures)"
    lines = [
        "# GPU check", "",
        f"{verdict} on {report['device']} ({report['device_name']}), torch {report['torch']}"
        + (f", CUDA {report['cuda']}" if report["cuda"] else "") + f", {report['date']}.", "",
        f"Precision: config `train.precision` {p['setting']} = {p['resolved']} here; checked: {', '.join(p['checked'])}. "
        f"config `train.compile`: {report['compile_setting']}.", "",
    ]
    if report["failures"]:
        lines += ["## Failures", "", *[f"- {line}" for line in report["failures"]], ""]
    t = report["tolerances"]
    lines += ["## Correctness against the CPU fp32 reference", "",
              f"Reference: {t['reference']}; a fixed batch of {report['batch']['check_sentences']} sentences of "
              f"{report['batch']['length']} units (language models: {report['batch']['check_sentences']} columns of bptt), "
              "dropout off in translation models, masks and samples shared. Tolerances: "
              + "; ".join(f"{k}: loss within {v['loss_relative']:g}, gradient cosine at least {v['gradient_cosine']:g}, "
                          f"words at least {v['words']:.0%}" for k, v in t.items() if k in ("fp32", "tf32", "bf16")) + ".", "",
              "| family | experiment | precision | loss relative difference | min gradient cosine (parameter group) "
              "| words agreeing | dtypes | passed |", "|---|---|---|---|---|---|---|---|"]
    for name, entry in report["families"].items():
        for precision, c in entry["correctness"].items():
            d = entry["dtypes"][precision]
            lines.append(f"| {name} | {entry['experiment']} | {precision} | {c['loss_relative']:.2e} | "
                         f"{cell(c['min_gradient_cosine'])} ({c['min_gradient_cosine_group']}) | {c['words']:.0%} | "
                         f"{'ok' if d['passed'] else '; '.join(d['problems'])} | "
                         f"{'yes' if c['passed'] and d['passed'] else 'NO'} |")
    lines += ["", "## Speed and syncs", "",
              f"One training step (forward, backward, clipping, optimiser) at train.batch_size "
              f"{report['batch']['speed_batch']} x {report['batch']['length']} units (language models: their batch x bptt), "
              f"in {p['resolved']}, the median of {report['batch']['steps']} after {report['batch']['warmup']} warm-up steps. "
              "`step_seconds` in gpu_check.json holds these per family for the cost plan.", "",
              "| family | step ms alone | target tokens/s alone | host syncs per step |"
              + "".join(f" step ms at {j} jobs | device tokens/s at {j} jobs |" for j in _jobs(report)),
              "|---|---|---|---|" + "---|---|" * len(_jobs(report))]
    for name, entry in report["families"].items():
        s = entry["speed"]
        shared = "".join(f" {report['jobs_per_device'][j][name]['step_seconds'] * 1000:.1f} | "
                         f"{report['jobs_per_device'][j][name]['device_tokens_per_second']:.4g} |" for j in _jobs(report))
        lines.append(f"| {name} | {s['step_seconds'] * 1000:.1f} | {s['tokens_per_second']:.4g} | "
                     f"{cell(entry['syncs_per_step'])} |{shared}")
    if not _jobs(report):
        lines += ["", f"Jobs per device: {report['jobs_per_device']}."]
    lines += ["", "## train.compile against eager", ""]
    if isinstance(report["compile"], str):
        lines.append(f"{report['compile']}.")
    else:
        lines += ["| family | mode | loss relative difference | min gradient cosine | words agreeing | eager step ms "
                  "| compiled step ms | speedup | passed |", "|---|---|---|---|---|---|---|---|---|"]
        for e in report["compile"]:
            lines.append(f"| {e['family']} | {e['mode']} | {cell(e.get('loss_relative'))} | {cell(e.get('min_gradient_cosine'))} | "
                         f"{cell(e.get('words'))} | {cell(e.get('eager_step_seconds', 0) * 1000 or None)} | "
                         f"{cell(e.get('compiled_step_seconds', 0) * 1000 or None)} | {cell(e.get('speedup'))} | "
                         f"{'yes' if e['passed'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def _jobs(report: dict) -> list[str]:
    return list(report["jobs_per_device"]) if isinstance(report["jobs_per_device"], dict) else []


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["export-config"]:
        import yaml

        source, target = argv[1:3]
        write_text(target, json.dumps(yaml.safe_load(Path(source).read_text()), indent=1) + "\n")
        return 0
    parser = argparse.ArgumentParser(prog="python -m workflow_src.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="config file (YAML or JSON) or a JSON object")
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu_check.json and gpu_check.md")
    parser.add_argument("--compile", choices=("always", "cuda", "never"), default="always",
                        help="check train.compile's modes against eager: always, on CUDA only, never")
    parser.add_argument("--jobs-per-device", type=int, nargs="*", default=[2, 4],
                        help="also time the families with this many processes on the device (CUDA)")
    parser.add_argument("--families", nargs="*", help="only the families whose names contain one of these")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)

    import torch

    from workflow_src import gpu_check
    from workflow_src.model.gpu import job_device

    config = read_config(args.config)
    if args.threads:
        torch.set_num_threads(args.threads)
    with job_device(config["train"]["device"]) as device:
        report = gpu_check.run(config, device, args.compile, args.jobs_per_device, args.families,
                               log=lambda message: print(message, flush=True))
    text = markdown(report)
    write_text(args.out / "gpu_check.json", json.dumps(report, indent=1) + "\n")
    write_text(args.out / "gpu_check.md", text)
    print(text, flush=True)
    for line in report["failures"]:
        print(line, file=sys.stderr, flush=True)
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
