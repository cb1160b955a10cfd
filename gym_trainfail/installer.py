"""Installing Python packages fast: ``uv`` when it is there, pip when it is not (or fails).

Two kinds of install go through here: a **locked** one (a case runtime from its committed lock,
``--require-hashes --no-deps``: every artifact's sha256 is checked, nothing is resolved) and the
project's own virtual environment (``pip install -e .[extras]``, resolved). Either installer
installs the same thing; uv only does it faster (parallel downloads, one pass of bytecode
compilation over both cores).

uv does not read pip's configuration, and on many machines that configuration is what makes an
install work: a ``find-links`` folder or a local index that holds torch's CPU wheel, a
constraints file, a CA bundle. So uv is given **pip's effective settings**, read at run time from
``pip config list`` of the interpreter being installed into (its config files and ``PIP_*``
environment, in pip's precedence: ``global`` < ``install`` < environment), translated to uv's
options; uv's own configuration files and ``UV_*`` settings that would change what is resolved
are ignored. A pip setting uv cannot be given (say ``install.user``), or a constraint a locked
install cannot check, sends the install to pip, and the log says why. Where pip has no such
configuration, uv uses PyPI, as pip does.

Standard library only: the Makefile runs this file by path to set up the project's venv before
any dependency is installed (``python -I gym_trainfail/installer.py venv .venv``), and the
Docker image build runs it inside a base image that has nothing but Python.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

#: What ``make setup`` installs into the project's venv before the package (a setup tool, not a
#: dependency of the package: without it every install goes through pip).
UV_REQUIREMENT = "uv>=0.9"
MIN_UV = (0, 9)
#: ``auto`` (uv when found, else pip), ``pip`` (always pip), ``uv`` (uv or fail), or a path to uv.
INSTALLER_ENV = "TRAINFAIL_INSTALLER"
#: When set, each setup phase appends ``name<TAB>start<TAB>end<TAB>note`` (epoch seconds) here;
#: ``trainfail demo`` reads it to print how long each phase took.
PHASE_LOG_ENV = "TRAINFAIL_PHASE_LOG"

#: pip settings that do not change which artifacts a hash-checked or resolved install picks.
_NEUTRAL = frozenset(
    {
        "break-system-packages",
        "cache-dir",
        # PIP_CONFIG_FILE: which file the settings came from (they are read through it already).
        "config-file",
        "disable-pip-version-check",
        "exists-action",
        "log",
        "no-color",
        "no-input",
        "no-warn-conflicts",
        "no-warn-script-location",
        "prefer-binary",
        "progress-bar",
        "quiet",
        "require-hashes",
        "retries",
        "root-user-action",
        "use-feature",
        "verbose",
    }
)
#: pip settings translated to uv options or environment.
_TRANSLATED = frozenset(
    {
        "cert",
        "client-cert",
        "constraint",
        "default-timeout",
        "extra-index-url",
        "find-links",
        "index-url",
        "no-binary",
        "no-cache-dir",
        "no-index",
        "only-binary",
        "pre",
        "proxy",
        "timeout",
        "trusted-host",
    }
)
#: pip's sections that apply to ``pip install``, lowest precedence first.
_SECTIONS = ("global", "install", ":env:")
#: ``UV_*`` variables passed through to uv: none of them changes what gets installed.
_UV_ENV_KEPT = frozenset(
    {
        "UV_CACHE_DIR",
        "UV_CONCURRENT_BUILDS",
        "UV_CONCURRENT_DOWNLOADS",
        "UV_CONCURRENT_INSTALLS",
        "UV_HTTP_TIMEOUT",
        "UV_NATIVE_TLS",
    }
)

Progress = Callable[[str], None]


class InstallError(Exception):
    """An install failed with every installer tried; the message says where the log is."""


@dataclass(frozen=True)
class PipSettings:
    """pip's effective settings for ``pip install``, as far as they decide what is installed."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False
    constraints: tuple[str, ...] = ()
    only_binary: tuple[str, ...] = ()
    no_binary: tuple[str, ...] = ()
    pre: bool = False
    trusted_hosts: tuple[str, ...] = ()
    cert: str | None = None
    client_cert: str | None = None
    proxy: str | None = None
    timeout: str | None = None
    no_cache: bool = False
    #: ``section.key`` of settings uv cannot be given: such an install goes to pip.
    untranslated: tuple[str, ...] = ()


def parse_pip_config(listing: str) -> PipSettings:
    """The settings in ``pip config list`` output (``section.key='value'`` lines), merged in
    pip's precedence for ``pip install``: ``global``, then ``install``, then ``PIP_*``."""
    by_section: dict[str, dict[str, str]] = {section: {} for section in _SECTIONS}
    ignored: list[str] = []
    for line in listing.splitlines():
        name, sep, raw = line.partition("=")
        section, dot, key = name.strip().partition(".")
        if not sep or not dot:
            continue
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            value = raw.strip()
        key = key.replace("_", "-")
        if section in by_section:
            by_section[section][key] = str(value)
        else:
            ignored.append(f"{section}.{key}")
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    for section in _SECTIONS:
        for key, value in by_section[section].items():
            merged[key] = value
            origin[key] = section
    untranslated = tuple(sorted(f"{origin[k]}.{k}" for k in merged if k not in _NEUTRAL and k not in _TRANSLATED))

    def words(key: str) -> tuple[str, ...]:
        return tuple(merged.get(key, "").split())

    def flag(key: str) -> bool:
        return merged.get(key, "").strip().lower() in {"1", "true", "yes", "on"}

    return PipSettings(
        index_url=merged.get("index-url") or None,
        extra_index_urls=words("extra-index-url"),
        find_links=words("find-links"),
        no_index=flag("no-index"),
        constraints=words("constraint"),
        only_binary=words("only-binary"),
        no_binary=words("no-binary"),
        pre=flag("pre"),
        trusted_hosts=words("trusted-host"),
        cert=merged.get("cert") or None,
        client_cert=merged.get("client-cert") or None,
        proxy=merged.get("proxy") or None,
        timeout=merged.get("timeout") or merged.get("default-timeout") or None,
        # pip disables its cache for any value of no-cache-dir (even "false").
        no_cache="no-cache-dir" in merged,
        untranslated=untranslated,
    )


def pip_settings(python: Path, env: Mapping[str, str]) -> PipSettings:
    """pip's effective settings for an install into ``python``'s environment, read from that
    environment's own pip (its site config counts) under ``env`` (its ``PIP_*`` count)."""
    result = subprocess.run(
        [str(python), "-I", "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        env=_clean(env),
        check=False,
    )
    if result.returncode != 0:
        raise InstallError(f"`{python} -m pip config list` failed: {result.stderr.strip()[-400:]}")
    return parse_pip_config(result.stdout)


def uv_options(settings: PipSettings, *, hashed: bool) -> list[str]:
    """uv ``pip install`` options that give uv what pip's settings give pip. Constraints are
    left out of a hash-checked install (uv refuses unpinned constraints there; the caller checks
    them against the lock instead)."""
    # pip takes the best candidate across every index and find-links folder; uv's default takes
    # the first index that has the package. Match pip (a hashed lock still pins each artifact).
    options = ["--no-config", "--index-strategy", "unsafe-best-match"]
    if settings.no_index:
        options.append("--no-index")
    elif settings.index_url:
        options += ["--index-url", settings.index_url]
    if not settings.no_index:
        for url in settings.extra_index_urls:
            options += ["--extra-index-url", url]
    for link in settings.find_links:
        options += ["--find-links", link]
    if not hashed:
        for constraint in settings.constraints:
            options += ["--constraint", constraint]
    for value in settings.only_binary:
        options += ["--only-binary", value]
    for value in settings.no_binary:
        options += ["--no-binary", value]
    if settings.pre:
        options += ["--prerelease", "allow"]
    for host in settings.trusted_hosts:
        options += ["--allow-insecure-host", host]
    if settings.no_cache:
        options.append("--no-cache")
    return options


def uv_environment(settings: PipSettings, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for uv: pip's certificate, proxy and timeout in uv's terms, and no ``UV_*``
    setting that could change what uv installs (an index, a torch backend, a constraint)."""
    out = {k: v for k, v in env.items() if not k.startswith("UV_") or k in _UV_ENV_KEPT}
    if settings.cert:
        out["SSL_CERT_FILE"] = settings.cert
    if settings.client_cert:
        out["SSL_CLIENT_CERT"] = settings.client_cert
    if settings.proxy:
        out.setdefault("HTTPS_PROXY", settings.proxy)
        out.setdefault("HTTP_PROXY", settings.proxy)
    if settings.timeout:
        out["UV_HTTP_TIMEOUT"] = str(int(float(settings.timeout)))
    return out


# -- finding uv --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Uv:
    """A usable uv executable."""

    path: Path
    version: str

    @property
    def label(self) -> str:
        return f"uv {self.version}"


def installer_choice(env: Mapping[str, str] | None = None) -> str:
    """``$TRAINFAIL_INSTALLER``: ``auto`` (default), ``pip``, ``uv``, or a path to uv."""
    value = (env if env is not None else os.environ).get(INSTALLER_ENV, "").strip() or "auto"
    if value not in {"auto", "pip", "uv"} and "/" not in value:
        raise InstallError(f"{INSTALLER_ENV}={value!r}: expected auto, pip, uv or a path to a uv executable")
    return value


def find_uv(env: Mapping[str, str] | None = None) -> tuple[Uv | None, str]:
    """The uv to use and, when there is none, why (for the log): ``$TRAINFAIL_INSTALLER`` when it
    is a path; else ``uv`` beside this interpreter (the project's venv), on ``PATH``, or the
    ``uv`` Python package's binary."""
    choice = installer_choice(env)
    if choice == "pip":
        return None, f"{INSTALLER_ENV}=pip"
    if "/" in choice:
        if not (Path(choice).is_file() and os.access(choice, os.X_OK)):
            return None, f"{INSTALLER_ENV}={choice} is not an executable file"
        candidates = [Path(choice)]
    else:
        candidates = [Path(sys.executable).parent / "uv"]
        on_path = shutil.which("uv", path=(env if env is not None else os.environ).get("PATH"))
        if on_path:
            candidates.append(Path(on_path))
        candidates.extend(_uv_package_binary())
    problems = []
    for candidate in candidates:
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        version, problem = _uv_version(candidate)
        if version is not None:
            return Uv(candidate, version), ""
        problems.append(problem)
    if problems:
        return None, "; ".join(problems)
    return None, f"uv is not installed (`pip install '{UV_REQUIREMENT}'` makes installs several times faster)"


def _uv_package_binary() -> list[Path]:
    try:
        import uv  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return []
    try:
        return [Path(uv.find_uv_bin())]
    except Exception:  # noqa: BLE001 - a broken uv package is the same as none
        return []


def _uv_version(path: Path) -> tuple[str | None, str]:
    try:
        result = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{path} does not run ({exc})"
    match = re.match(r"uv (\d+)\.(\d+)\.(\d+)", result.stdout.strip())
    if result.returncode != 0 or match is None:
        return None, f"{path} --version answered {result.stdout.strip()[:80]!r} (exit {result.returncode})"
    if tuple(int(part) for part in match.groups()[:2]) < MIN_UV:
        return None, f"{path} is uv {'.'.join(match.groups())}, older than {'.'.join(map(str, MIN_UV))}"
    return ".".join(match.groups()), ""


# -- installing --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    """Which installer did an install, how long it took, and why pip was used when it was."""

    installer: str
    seconds: float
    fallback: str = ""


class LockedPin(Protocol):
    """``name==version`` of one locked package (the lock's hashes stay in the lock file)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...


def install_locked(
    python: Path,
    lock: Path,
    pins: Sequence[LockedPin],
    *,
    log: Path,
    env: Mapping[str, str],
    reset: Callable[[], None],
    progress: Progress = lambda _: None,
) -> Installed:
    """Install the hashed lock ``lock`` (``--require-hashes --no-deps``) into the venv of
    ``python``: with uv when one is usable, else (or when uv fails) with pip, after ``reset``
    has made the venv afresh. Either way the installed distributions must be exactly the lock's
    pins, plus what the fresh venv held (pip); anything else is refused."""
    started = time.monotonic()
    seed = installed_distributions(python, env)
    uv, why = _usable_uv(python, env, log)
    settings, why = _settings_for_uv(python, env) if uv is not None else (None, why)
    if uv is not None and settings is not None:
        why = _constraint_problem(python, settings.constraints, pins, env)
        if not why:
            progress(f"installing {lock.name} with {uv.label} ({len(pins)} packages, hash-checked)")
            argv = [str(uv.path), "pip", "install", "--python", str(python), *uv_options(settings, hashed=True)]
            argv += ["--require-hashes", "--no-deps", "--compile-bytecode", "--link-mode", "copy", "-r", str(lock)]
            failure = _run_logged(argv, log, uv_environment(settings, env))
            if failure is None:
                _check_installed(python, pins, seed, env, uv.label)
                return Installed(uv.label, round(time.monotonic() - started, 1))
            why = f"{uv.label} failed ({failure})"
            reset()
    if installer_choice(env) == "uv":
        raise InstallError(f"{INSTALLER_ENV}=uv but uv cannot install here: {why}; see {log}")
    progress(f"installing {lock.name} with pip ({len(pins)} packages, hash-checked): {why}")
    argv = [str(python), "-m", "pip", "install", "--no-input", "--require-hashes", "--no-deps", "-r", str(lock)]
    failure = _run_logged(argv, log, dict(env))
    if failure is not None:
        raise InstallError(f"pip could not install {lock.name} ({failure}); see {log}:\n{_tail(log)}")
    _check_installed(python, pins, seed, env, "pip")
    return Installed("pip", round(time.monotonic() - started, 1), why)


def _usable_uv(python: Path, env: Mapping[str, str], log: Path) -> tuple[Uv | None, str]:
    uv, why = find_uv(env)
    with log.open("a") as handle:
        handle.write(f"# installer: {uv.label + ' at ' + str(uv.path) if uv else 'pip (' + why + ')'}\n")
    return uv, why


def _settings_for_uv(python: Path, env: Mapping[str, str]) -> tuple[PipSettings | None, str]:
    """pip's settings when uv can be given all of them, else ``None`` and why not."""
    try:
        settings = pip_settings(python, env)
    except InstallError as exc:
        return None, str(exc)
    if settings.untranslated:
        return None, f"pip's configuration sets {', '.join(settings.untranslated)}, which uv cannot be given"
    return settings, ""


#: Checks constraint files against pinned versions with the packaging library pip vendors (the
#: target venv always has pip: it is made with ``python -m venv``).
_CONSTRAINT_CHECK = r"""
import json, re, sys
from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
from pip._vendor.packaging.utils import canonicalize_name
data = json.load(sys.stdin)
pins = {canonicalize_name(n): v for n, v in data["pins"]}
problems = []
for path in data["files"]:
    try:
        text = open(path).read()
    except OSError as exc:
        problems.append(f"constraint file {path} cannot be read ({exc})")
        continue
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement:
            problems.append(f"{path}: {line!r} is not a plain requirement")
            continue
        if req.url or (req.marker is not None and not req.marker.evaluate()):
            continue
        version = pins.get(canonicalize_name(req.name))
        if version is not None and not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name}=={version} is outside {line!r} ({path})")
print(json.dumps(problems))
"""


def _constraint_problem(python: Path, files: Sequence[str], pins: Sequence[LockedPin], env: Mapping[str, str]) -> str:
    """Why pip's constraints rule uv out for a locked install ("" when every pin meets them):
    uv cannot take unpinned constraints with ``--require-hashes``, so they are checked here, and
    a pin outside one is left to pip, which refuses it in its own words."""
    if not files:
        return ""
    payload = json.dumps({"files": list(files), "pins": [[p.name, p.version] for p in pins]})
    result = subprocess.run(
        [str(python), "-I", "-c", _CONSTRAINT_CHECK],
        input=payload,
        capture_output=True,
        text=True,
        env=_clean(env),
        check=False,
    )
    if result.returncode != 0:
        return f"pip's constraints ({', '.join(files)}) could not be checked: {result.stderr.strip()[-300:]}"
    problems = json.loads(result.stdout)
    return "; ".join(problems)


_INSTALLED = (
    "import json, importlib.metadata as m; "
    "print(json.dumps(sorted({(d.metadata['Name'], d.version) for d in m.distributions()})))"
)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_distributions(python: Path, env: Mapping[str, str]) -> dict[str, str]:
    """Every distribution in ``python``'s environment: canonical name → version."""
    result = subprocess.run(
        [str(python), "-I", "-c", _INSTALLED], capture_output=True, text=True, env=_clean(env), check=True
    )
    return {_canonical(name): version for name, version in json.loads(result.stdout)}


def _check_installed(
    python: Path, pins: Sequence[LockedPin], seed: Mapping[str, str], env: Mapping[str, str], installer: str
) -> None:
    """Refuse an environment that holds anything but the lock's pins and what the fresh venv held
    (``seed``: pip, setuptools), whichever installer made it: a CUDA torch, an extra dependency,
    a missing or different version."""
    installed = installed_distributions(python, env)
    wanted = {_canonical(p.name): p.version for p in pins}
    extra = {n: v for n, v in installed.items() if n not in wanted and seed.get(n) != v}
    problems = [f"{n}=={v} is installed but not locked" for n, v in sorted(extra.items())]
    problems += [f"{n}=={v} is locked but not installed" for n, v in sorted(wanted.items()) if n not in installed]
    problems += [
        f"{n}: {installed[n]} installed, {v} locked"
        for n, v in sorted(wanted.items())
        if n in installed and installed[n] != v
    ]
    if problems:
        raise InstallError(f"{installer} installed something else than the lock: {'; '.join(problems)}")


def _clean(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without what would point a child at other packages than the target venv's."""
    return {k: v for k, v in env.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}


def _run_logged(argv: list[str], log: Path, env: Mapping[str, str]) -> str | None:
    """Run ``argv`` with its output appended to ``log``; ``None`` on success, else a short reason."""
    with log.open("a") as handle:
        handle.write(f"$ {' '.join(argv)}\n")
        handle.flush()
        try:
            result = subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT, env=_clean(env), check=False)
        except OSError as exc:
            return f"could not start: {exc}"
    if result.returncode == 0:
        return None
    last = next((line for line in reversed(_tail(log).splitlines()) if line.strip()), "")
    return f"exit {result.returncode}: {last.strip()[:200]}"


def _tail(log: Path, lines: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


# -- the project's venv ------------------------------------------------------------------------


def install_project(
    venv: Path, project: Path, extras: str, *, log: Path, progress: Progress = lambda _: None
) -> Installed:
    """``pip install -e project[extras]`` into ``venv`` (made when missing), with uv when it can
    be had (installed first with the venv's pip, from ``UV_REQUIREMENT``), else with pip."""
    started = time.monotonic()
    python = venv / "bin" / "python"
    env = dict(os.environ)
    if not python.exists():
        progress(f"creating {venv}")
        failure = _run_logged([sys.executable, "-m", "venv", str(venv)], log, env)
        if failure is not None:
            raise InstallError(f"could not create {venv} ({failure}); see {log}")
    target = f"{project}[{extras}]" if extras else str(project)
    uv, why = _project_uv(venv, env, log, progress)
    settings, why = _settings_for_uv(python, env) if uv is not None else (None, why)
    if uv is not None and settings is not None:
        progress(f"installing {target} (editable) with {uv.label}")
        argv = [str(uv.path), "pip", "install", "--python", str(python), *uv_options(settings, hashed=False)]
        # Bytecode compiled at install, as pip does: where PYTHONDONTWRITEBYTECODE is set (this
        # project's machines set it) nothing would ever cache it, and every process would
        # compile what it imports.
        argv += ["--compile-bytecode", "--link-mode", "copy", "-e", target]
        failure = _run_logged(argv, log, uv_environment(settings, env))
        if failure is None:
            return Installed(uv.label, round(time.monotonic() - started, 1))
        why = f"{uv.label} failed ({failure})"
    if installer_choice(env) == "uv":
        raise InstallError(f"{INSTALLER_ENV}=uv but uv cannot install here: {why}; see {log}")
    progress(f"installing {target} (editable) with pip: {why}")
    for argv in (
        [str(python), "-m", "pip", "install", "--no-input", "-q", "--upgrade", "pip"],
        [str(python), "-m", "pip", "install", "--no-input", "-q", "-e", target],
    ):
        failure = _run_logged(argv, log, env)
        if failure is not None:
            raise InstallError(f"pip could not install {target} ({failure}); see {log}:\n{_tail(log)}")
    return Installed("pip", round(time.monotonic() - started, 1), why)


def _project_uv(venv: Path, env: Mapping[str, str], log: Path, progress: Progress) -> tuple[Uv | None, str]:
    """The venv's uv, installed with its pip when missing (and uv is wanted)."""
    choice = installer_choice(env)
    if choice == "pip":
        return None, f"{INSTALLER_ENV}=pip"
    if "/" in choice:
        return find_uv(env)
    local = venv / "bin" / "uv"
    if not local.exists():
        progress(f"installing {UV_REQUIREMENT} with pip (the fast installer)")
        argv = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-input", "-q", UV_REQUIREMENT]
        failure = _run_logged(argv, log, env)
        if failure is not None:
            return None, f"uv could not be installed ({failure})"
    version, problem = _uv_version(local)
    return (Uv(local, version), "") if version is not None else (None, problem)


def record_phase(name: str, started: float, ended: float, note: str = "", env: Mapping[str, str] | None = None) -> None:
    """Append one phase's wall-clock span (epoch seconds) to ``$TRAINFAIL_PHASE_LOG`` when set."""
    path = (env if env is not None else os.environ).get(PHASE_LOG_ENV)
    if not path:
        return
    note = " ".join(note.split())
    with open(path, "a") as handle:
        handle.write(f"{name}\t{started:.3f}\t{ended:.3f}\t{note}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -I gym_trainfail/installer.py venv VENV [--extras a,b]``: the project's venv."""
    parser = argparse.ArgumentParser(prog="installer.py", description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("venv", help="make VENV (when missing) and install this checkout into it, editable")
    p.add_argument("venv", type=Path)
    p.add_argument("--extras", default="", help="comma-separated extras (default: none, what the demo needs)")
    p.add_argument("--project", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    venv = args.venv.absolute()
    venv.mkdir(parents=True, exist_ok=True)
    log = venv / "trainfail-install.log"
    started = time.time()

    def say(line: str) -> None:
        print(f"setup: {line}", file=sys.stderr, flush=True)

    try:
        done = install_project(venv, args.project, args.extras, log=log, progress=say)
    except InstallError as exc:
        say(f"error: {exc}")
        return 1
    extras = f"[{args.extras}]" if args.extras else ""
    note = f"{done.installer}; pip because {done.fallback}" if done.fallback else done.installer
    say(f"installed gym-trainfail{extras} in {done.seconds:.1f} s ({note}; log {log})")
    record_phase(f"package{extras}", started, time.time(), note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
