"""Build hook: a built wheel carries the in-tree cases and runtime recipes as package data.

``envs/`` (the cases) and ``containers/`` (requirement sets, locks, hooks, Dockerfiles) live at
the top of the checkout. ``build_py`` copies them to ``gym_trainfail/_builtin/`` in the build
tree (never into the source tree), where :mod:`gym_trainfail.paths` finds them in an installed
package. An editable install copies nothing: it uses the checkout's folders. The sdist carries
both folders (``MANIFEST.in``), so a wheel built from it is complete too.
"""

from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
DATA_DIRS = ("envs", "containers")
#: Never packaged: caches and build leftovers that sit beside the data in a working checkout.
EXCLUDED = ("__pycache__", "*.pyc", "*.pyo", ".ruff_cache", ".mypy_cache", ".pytest_cache", "*.egg-info", ".DS_Store")


def _ignored(_folder: str, names: list[str]) -> set[str]:
    return {name for name in names if any(fnmatch.fnmatch(name, pattern) for pattern in EXCLUDED)}


class BuildPyWithData(build_py):
    """``build_py`` that also copies ``envs/`` and ``containers/`` into the built package."""

    def run(self) -> None:
        editable = getattr(self, "editable_mode", False)
        if not editable:
            # A reused build/ keeps modules deleted or moved since: start the packages afresh.
            for package in ("gym_trainfail", "trainfail_agents"):
                shutil.rmtree(Path(self.build_lib) / package, ignore_errors=True)
        super().run()
        if editable:
            return  # the checkout's own folders are used (gym_trainfail.paths)
        target = Path(self.build_lib) / "gym_trainfail" / "_builtin"
        if HERE / "gym_trainfail" in (target.resolve(), *target.resolve().parents):
            raise RuntimeError(f"refusing to copy package data into the source tree ({target})")
        if target.exists():
            shutil.rmtree(target)
        for name in DATA_DIRS:
            source = HERE / name
            if not source.is_dir():
                raise RuntimeError(
                    f"{source} is missing: the wheel would have no {name}/ (build from a checkout or sdist)"
                )
            shutil.copytree(source, target / name, ignore=_ignored, symlinks=False)


setup(cmdclass={"build_py": BuildPyWithData})
