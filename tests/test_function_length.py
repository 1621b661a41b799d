"""The training code reads in named parts: no function in workflow_src/train/ is over 60 lines."""

import ast

from tests.conftest import REPO

LIMIT = 60  # lines, from the `def` line to the last line of the body


def test_no_function_in_train_is_over_60_lines():
    too_long = []
    for path in sorted((REPO / "workflow_src" / "train").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > LIMIT:
                too_long.append(
                    f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
                )
    assert not too_long, f"functions over {LIMIT} lines (split them into named parts): {too_long}"
