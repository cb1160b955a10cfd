"""The chores of a rubric round (docs/heldout-writing.md), run with the project's venv from the repository root.

    rubric_round.py snapshot DEST               a blind snapshot of HEAD for held-out writers (no rubric, set, record,
                                                 reader, its tests or diagnosis docs)
    rubric_round.py merge OUT SET_DIR SET_DIR    per case, check each set's hash and write
                                                 OUT/<case>/diagnosis/heldout.toml (ids prefixed with the set
                                                 folder's tag, e.g. heldout-r43 -> r43-h01)
    rubric_round.py install SET_DIR             copy a merged set into every case's grader/diagnosis/
    rubric_round.py release TAG "round N"       append every installed held-out set to its rubric as development
                                                 statements ("released held-out TAG <id>: <style>"), then remove it
    rubric_round.py check [FOLDER ...]          judge every development statement afresh; misjudged labels go to
                                                 $TUNE/miss-<folder>.txt (TUNE defaults to /tmp/tune)
    rubric_round.py why FOLDER LABEL... | --miss  how the judge reads development statements (by label substring)
    rubric_round.py judge FOLDER TEXT           the verdict on any statement, with each concept's stances
    rubric_round.py measure SET_DIR [--rules] [--root CHECKOUT]
                                                 a merged set's figures on a checkout's judge, without installing it

Only `check`, `why` and `judge` read development statements; `measure` prints figures, never which statement was
missed (the set is measured once, then released).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / "envs"
TUNE = Path(os.environ.get("TUNE", "/tmp/tune"))
#: What a blind writer must not see.
HIDDEN = (
    "blind-sets",  # the next round's merged blind set, committed unopened
    "envs/*/grader/diagnosis",
    "envs/*/admission*.json",
    "envs/*/traincheck-reach.json",
    "tests/fixtures/cases/*/grader/diagnosis",
    "docs/diagnosis.md",
    "docs/case-authoring.md",
    "docs/heldout-writing.md",
    "gym_trainfail/diagnosis",
    "tests/test_diagnosis*",
    "tests/test_stance_model.py",
    "tests/test_mechanism_model.py",
    "tests/test_admission.py",
    "leaderboards",
    "scripts/rubric_round.py",
)


def toml_string(s: str) -> str:
    """``s`` as a TOML basic string."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out) + '"'


def folders() -> list[str]:
    return sorted(p.name for p in ENVS.iterdir() if (p / "grader/diagnosis/rubric.toml").exists())


def snapshot(dest: Path) -> None:
    if dest.exists():
        sys.exit(f"{dest} exists; remove it first")
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    for pattern in HIDDEN:
        for p in dest.glob(pattern):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    print(f"blind snapshot of HEAD at {dest}")


def merge(out: Path, sets: list[Path]) -> None:
    cases = sorted({c.name for s in sets for c in s.iterdir() if c.is_dir()})
    for case in cases:
        parts, authors, written, case_id = [], [], [], None
        for s in sets:
            raw = (s / case / "heldout.toml").read_bytes()
            if hashlib.sha256(raw).hexdigest() != (s / case / "heldout.sha256").read_text().split()[0]:
                sys.exit(f"{s / case}: heldout.toml no longer matches its hash")
            data = tomllib.loads(raw.decode())
            case_id = case_id or data["heldout"]["case"]
            if data["heldout"]["case"] != case_id:
                sys.exit(f"{s / case}: written for {data['heldout']['case']}, not {case_id}")
            authors.append(data["heldout"]["author"])
            written.append(data["heldout"]["written"])
            tag = s.name.removeprefix("heldout-")
            parts += [(f"{tag}-{st['id']}", st) for st in data["statement"]]
        lines = ["[heldout]", f"case = {toml_string(case_id or '')}", f"author = {toml_string('; '.join(authors))}",
                 f"written = {toml_string(max(written))}"]  # fmt: skip
        for sid, st in parts:
            lines += ["", "[[statement]]", f"id = {toml_string(sid)}"]
            lines += [f"{k} = {toml_string(st[k])}" for k in ("expect", "stance", "mechanism", "style")]
            lines += [f"withdrawn = {'true' if st['withdrawn'] else 'false'}", f"text = {toml_string(st['text'])}"]
        text = "\n".join(lines) + "\n"
        assert [s["text"] for s in tomllib.loads(text)["statement"]] == [s["text"] for _, s in parts]
        where = out / case / "diagnosis"
        where.mkdir(parents=True, exist_ok=True)
        (where / "heldout.toml").write_text(text)
        (where / "heldout.sha256").write_text(hashlib.sha256(text.encode()).hexdigest() + "  heldout.toml\n")
        print(f"{case}: {len(parts)} statements")


def install(merged: Path) -> None:
    for case in sorted(p.name for p in merged.iterdir()):
        for name in ("heldout.toml", "heldout.sha256"):
            shutil.copyfile(merged / case / "diagnosis" / name, ENVS / case / "grader" / "diagnosis" / name)
        print(f"installed {case}")


def release(tag: str, round_name: str) -> None:
    for case in folders():
        diagnosis = ENVS / case / "grader" / "diagnosis"
        heldout = diagnosis / "heldout.toml"
        if not heldout.exists():
            continue
        data = tomllib.loads(heldout.read_text())
        meta, statements = data["heldout"], data["statement"]
        rule = "# " + "-" * 93
        lines = ["", rule,
                 f"# released held-out {tag} ({meta['author']}, written {meta['written']}; "
                 f"{len(statements)} statements, schema v5;",
                 "# measured before release, figures in docs/diagnosis.md),",
                 f"# appended as development statements by issue 35 {round_name} with their stance and mechanism "
                 "labels",
                 rule]  # fmt: skip
        for st in statements:
            lines += ["", "[[fixture]]", f'expect = "{st["expect"]}"', f'stance = "{st["stance"]}"',
                      f'mechanism = "{st["mechanism"]}"',
                      "label = " + toml_string(f"released held-out {tag} {st['id']}: {st['style']}"),
                      "text = " + toml_string(st["text"])]  # fmt: skip
        rubric = diagnosis / "rubric.toml"
        text = rubric.read_text()
        text = (text if text.endswith("\n") else text + "\n") + "\n".join(lines) + "\n"
        tomllib.loads(text)
        rubric.write_text(text)
        heldout.unlink()
        (diagnosis / "heldout.sha256").unlink()
        print(f"{case}: {len(statements)} released")


def _check_one(case: str) -> tuple[str, int, int]:
    os.environ["TRAINFAIL_HOME"] = tempfile.mkdtemp(prefix="tf-home-")
    from gym_trainfail.diagnosis.fixtures import check_fixtures
    from gym_trainfail.diagnosis.judges import RubricJudge

    rubric = _rubric(case)
    found = check_fixtures(rubric, RubricJudge())
    TUNE.mkdir(parents=True, exist_ok=True)
    (TUNE / f"miss-{case}.txt").write_text("".join(m + "\n" for m in found.misjudged))
    return case, len(rubric.fixtures), len(found.misjudged)


def check(cases: list[str]) -> None:
    total = 0
    with ProcessPoolExecutor(int(os.environ.get("P", "2"))) as pool:
        for case, count, missed in pool.map(_check_one, cases or folders()):
            total += missed
            print(f"{case}: {count} statements, {missed} misjudged", flush=True)
    print(f"misjudged in all: {total}")


def _rubric(case: str, root: Path = ROOT) -> Any:
    from gym_trainfail.cases import load_case

    rubric = load_case(root / "envs" / case).rubric
    assert rubric is not None, f"{case} has no diagnosis rubric"
    return rubric


def _reading(rubric: Any, text: str) -> list[str]:
    """The verdict on ``text`` and, per concept, the stances its phrasings matched in."""
    from gym_trainfail.diagnosis.judges import RubricJudge, _stances
    from gym_trainfail.diagnosis.reading import views, withdrawals

    v = RubricJudge().judge(text, rubric)
    taken_back = withdrawals(text, [p for w in rubric.wrong for p in w.phrasings])
    read = views(text)
    out = [f"judged: correct={v.correct} hypothesis={v.hypothesis} stance={v.stance} wrong={list(v.wrong)} "
           f"note={v.note!r}"]  # fmt: skip
    for c in (*rubric.concepts, *rubric.entailed):
        out.append(f"  concept {c.name[:70]!r}: {sorted(_stances(c, read, taken_back, wrong=False))}")
    return out


def why(case: str, keys: list[str]) -> None:
    if keys == ["--miss"]:
        keys = [
            line.rsplit(" (expected", 1)[0] for line in (TUNE / f"miss-{case}.txt").read_text().splitlines() if line
        ]
    rubric = _rubric(case)
    for f in rubric.fixtures:
        label = f.label or f.text[:60]
        if any(k == label or k in label for k in keys):
            print(f"=== {label}\n  labelled: correct={f.correct} hypothesis={f.hypothesis} stance={f.stance} "
                  f"mechanism={f.mechanism}")  # fmt: skip
            print("\n".join("  " + line for line in _reading(rubric, f.text)))
            print("  text: " + f.text.strip().replace("\n", "\n        "))


def measure(merged: Path, rules: bool, root: Path) -> None:
    """The merged set's figures on ``root``'s judge: another checkout's code is run in a process of its own, with
    that checkout first on the import path."""
    if root.resolve() != ROOT and os.environ.get("RUBRIC_ROUND_ROOT") != str(root):
        command = [sys.executable, __file__, "measure", str(merged), "--root", str(root), *(["--rules"] * rules)]
        env = {**os.environ, "PYTHONPATH": str(root), "RUBRIC_ROUND_ROOT": str(root)}
        subprocess.run(command, check=True, cwd=root, env=env)
        return
    os.environ["TRAINFAIL_HOME"] = tempfile.mkdtemp(prefix="tf-home-")
    from gym_trainfail.cases import load_case
    from gym_trainfail.diagnosis.heldout import check_heldout, load_heldout, pooled_line, summary_line
    from gym_trainfail.diagnosis.judges import RubricJudge

    checks = []
    for case in sorted(p.name for p in merged.iterdir()):
        spec = load_case(root / "envs" / case)
        heldout = load_heldout(merged / case, spec.id)
        assert heldout is not None and spec.rubric is not None, f"{case}: no held-out set or no rubric"
        check = check_heldout(heldout, spec.rubric, RubricJudge(vetoes=not rules))
        checks.append(check)
        print(f"{case}: {summary_line(check)}", flush=True)
        for problem in check.problems():
            print(f"  refused: {problem}")
    print(pooled_line(checks))


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    command, args = argv[0], argv[1:]
    if command == "snapshot" and len(args) == 1:
        snapshot(Path(args[0]))
    elif command == "merge" and len(args) >= 2:
        merge(Path(args[0]), [Path(a) for a in args[1:]])
    elif command == "install" and len(args) == 1:
        install(Path(args[0]))
    elif command == "release" and len(args) == 2:
        release(args[0], args[1])
    elif command == "check":
        check(args)
    elif command == "why" and len(args) >= 2:
        why(args[0], args[1:])
    elif command == "judge" and len(args) == 2:
        print("\n".join(_reading(_rubric(args[0]), args[1])))
    elif command == "measure" and args:
        root = Path(args[args.index("--root") + 1]) if "--root" in args else ROOT
        measure(Path(args[0]), "--rules" in args, root)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
