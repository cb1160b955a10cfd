"""``trainfail case new``: a new case folder, on the case SDK, that qualifies as it stands.

The scaffold (``gym_trainfail/case_template/``, files to read and copy) is a small but real
two-rank gloo pipeline whose README promises the mean of every sample on every rank while its
code averages the ranks' means; a two-phase grader on the SDK (``kit/scenario.py``: the scenario
type; ``kit/run.py``: the pipeline and its launch; ``judge.py``: what is read and compared), one
healthy and one failure scenario, a promise table, a reference repair and a wrong repair (both
written here as patches against the workspace), and a fresh grader canary. It is admitted by
``trainfail qualify --wrong-repairs`` as it stands; replace the toy failure with yours
(docs/case-authoring.md walks a real case through the same parts).
"""

from __future__ import annotations

import difflib
import re
import secrets
from pathlib import Path

from gym_trainfail.cases import CASE_ID_RE, CaseSpec, load_case
from gym_trainfail.errors import TrainFailError

#: The template folder: every file is copied with ``@CASE_ID@``, ``@NAME@`` and ``@CANARY@`` filled in.
TEMPLATE = Path(__file__).resolve().parent / "case_template"

#: The reference repair of the scaffold: sum and count across ranks, then divide.
_REPAIR = (
    "    local_mean = samples.mean()\n    dist.all_reduce(local_mean)\n    global_mean = local_mean / world\n",
    "    totals = torch.stack([samples.sum(), torch.tensor(float(samples.numel()))])\n"
    "    dist.all_reduce(totals)\n    global_mean = totals[0] / totals[1]\n",
)
#: A plausible wrong repair: the sums across ranks over this rank's own count.
_LOCAL_COUNT = (
    _REPAIR[0],
    "    total = samples.sum()\n    dist.all_reduce(total)\n    global_mean = total / samples.numel()\n",
)


def _patch(train_py: str, change: tuple[str, str]) -> str:
    before, after = change
    if before not in train_py:
        raise TrainFailError("the case template's train.py no longer holds the code its patches change")
    changed = train_py.replace(before, after)
    diff = difflib.unified_diff(
        train_py.splitlines(keepends=True), changed.splitlines(keepends=True), "a/train.py", "b/train.py"
    )
    return "".join(diff)


def case_name(name: str) -> str:
    """``my-new case`` -> ``MyNewCase`` (the Name part of the id)."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name) if p]
    if not parts:
        raise TrainFailError(f"cannot make a case name from {name!r}; use letters and digits, e.g. 'FSDPStateSkew'")
    joined = "".join(p[0].upper() + p[1:] for p in parts)
    if not joined[0].isalpha():
        raise TrainFailError(f"a case name must start with a letter, got {name!r}")
    return joined


def folder_name(name: str) -> str:
    """``FSDPStateSkew`` -> ``fsdp_state_skew``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def scaffold_case(name: str, parent: Path, namespace: str = "TrainFail") -> CaseSpec:
    """Write a new case folder under ``parent`` and return it, validated."""
    pascal = case_name(name)
    case_id = f"{namespace}/{pascal}-v0"
    if not CASE_ID_RE.match(case_id):
        raise TrainFailError(f"{case_id!r} is not a valid case id (Namespace/Name-vN)")
    root = parent / folder_name(pascal)
    if root.exists():
        raise TrainFailError(f"{root} already exists; choose another name or remove it")
    canary = f"TRAINFAIL-CANARY-{secrets.token_hex(16)}"
    fill = {
        "@CASE_ID@": case_id,
        "@NAME@": pascal,
        "@CANARY@": f"Leak canary (never where the agent or the run phase can look): {canary}",
    }
    for source in sorted(TEMPLATE.rglob("*")):
        if not source.is_file() or "__pycache__" in source.parts:
            continue
        text = source.read_text(encoding="utf-8")
        for key, value in fill.items():
            text = text.replace(key, value)
        target = root / source.relative_to(TEMPLATE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    train_py = (TEMPLATE / "workspace" / "train.py").read_text(encoding="utf-8")
    (root / "grader" / "reference.patch").write_text(_patch(train_py, _REPAIR))
    (root / "grader" / "wrong_repairs").mkdir()
    (root / "grader" / "wrong_repairs" / "local-count.patch").write_text(_patch(train_py, _LOCAL_COUNT))
    (root / "workspace" / "run.sh").chmod(0o755)
    return load_case(root)
