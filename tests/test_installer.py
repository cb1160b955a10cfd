"""The installer (gym_trainfail/installer.py): uv given pip's own settings, pip as the fallback,
and the same packages either way. Real pip, real uv, real venvs, from small wheels made here
(no index is reached: every install runs with pip's ``no-index`` and a local ``find-links``)."""

from __future__ import annotations

import ast
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_trainfail import installer
from gym_trainfail.installer import (
    InstallError,
    PipSettings,
    find_uv,
    install_locked,
    parse_pip_config,
    pip_settings,
    uv_environment,
    uv_options,
)
from gym_trainfail.paths import SOURCE_ROOT

#: Files only one installer writes into a distribution's metadata (its provenance), never code.
MakeVenv = Callable[[Path], Path]
INSTALLER_METADATA = {"INSTALLER", "RECORD", "REQUESTED", "uv_cache.json", "uv_build.json", "direct_url.json"}


@dataclass(frozen=True)
class Pin:
    name: str
    version: str


# -- wheels and locks made here -----------------------------------------------------------------


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    folder: Path, name: str, version: str, files: dict[str, str], scripts: dict[str, str] | None = None
) -> Path:
    """A pure-Python wheel with ``files`` (path → text) and console ``scripts`` (name → entry)."""
    dist = f"{name.replace('-', '_')}-{version}"
    meta = f"{dist}.dist-info"
    content = {path: text.encode() for path, text in files.items()}
    content[f"{meta}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    content[f"{meta}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if scripts:
        lines = "".join(f"{k} = {v}\n" for k, v in scripts.items())
        content[f"{meta}/entry_points.txt"] = f"[console_scripts]\n{lines}".encode()
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in content.items()]
    content[f"{meta}/RECORD"] = ("\n".join([*record, f"{meta}/RECORD,,"]) + "\n").encode()
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in content.items():
            archive.writestr(path, data)
    return wheel


def write_lock(path: Path, wheels: dict[str, Path], versions: dict[str, str]) -> Path:
    lines = []
    for name, wheel in wheels.items():
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        lines.append(f"{name}=={versions[name]} \\\n    --hash=sha256:{digest}")
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass(frozen=True)
class Repo:
    """Two wheels (one with a console script that imports the other) and their hashed lock."""

    wheels: Path
    lock: Path
    pins: tuple[Pin, ...]


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    made = {
        "tf-base": make_wheel(wheels, "tf-base", "1.0", {"tf_base/__init__.py": "VALUE = 41\n"}),
        "tf-tool": make_wheel(
            wheels,
            "tf-tool",
            "2.3",
            {"tf_tool/__init__.py": "from tf_base import VALUE\n\ndef main() -> None:\n    print(VALUE + 1)\n"},
            scripts={"tf-tool": "tf_tool:main"},
        ),
    }
    versions = {"tf-base": "1.0", "tf-tool": "2.3"}
    lock = write_lock(tmp_path / "test.lock", made, versions)
    return Repo(wheels, lock, tuple(Pin(n, v) for n, v in versions.items()))


def pip_env(tmp_path: Path, repo: Repo, config: str = "", **extra: str) -> dict[str, str]:
    """An environment whose pip sees only ``config`` (a pip.conf) and the test's wheels."""
    conf = tmp_path / "pip.conf"
    conf.write_text(config or "[global]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "TRAINFAIL_INSTALLER"))}
    env.update(
        PIP_CONFIG_FILE=str(conf),
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(repo.wheels),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        PIP_CACHE_DIR=str(tmp_path / "pip-cache"),
    )
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def template_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fresh venv (with pip, as the runtime builder makes them), copied for each test: pip
    and uv are run as ``python -m pip`` and ``--python``, which hold no path of the venv."""
    path = tmp_path_factory.mktemp("template") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path


@pytest.fixture
def make_venv(template_venv: Path) -> MakeVenv:
    def make(path: Path) -> Path:
        shutil.copytree(template_venv, path, symlinks=True)
        return path / "bin" / "python"

    return make


@pytest.fixture(scope="module")
def uv_path() -> Iterator[Path]:
    """The uv this machine has (``make setup`` installs it into the venv). Absent, the uv tests
    fail under CI (where the Makefile installed it) and are skipped, visibly, elsewhere."""
    uv, why = find_uv()
    if uv is None:
        if os.environ.get("CI"):
            pytest.fail(f"no uv under CI, where `make setup` installs it: {why}")
        pytest.skip(f"no uv here: {why}")
    yield uv.path


def installed_files(python: Path) -> dict[str, str]:
    """site-packages and bin of a venv: relative path → sha256 (``pyc`` for bytecode: it embeds
    the source's mtime), without the installers' own provenance files."""
    venv = python.parent.parent
    found = {}
    for top in (venv / "lib", venv / "bin"):
        for path in sorted(top.rglob("*")):
            if path.is_dir() or path.name in INSTALLER_METADATA or path.name.startswith("python"):
                continue
            rel = str(path.relative_to(venv))
            if path.suffix == ".pyc":
                found[rel] = "pyc"
            elif path.parent.name == "bin":
                found[rel] = "script"  # console-script wrappers: each installer has its own template
            else:
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def freeze(python: Path) -> list[str]:
    out = subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True)
    return out.stdout.split()


# -- pip's settings, as uv receives them --------------------------------------------------------


def test_pip_settings_come_from_pips_own_config_in_its_precedence(
    tmp_path: Path, repo: Repo, make_venv: MakeVenv
) -> None:
    """Real pip reads a config file and PIP_* variables; the install section overrides global and
    the environment overrides both, as in pip."""
    config = (
        "[global]\nindex-url = https://global.example/simple\nfind-links = /from/global\n"
        "extra-index-url = https://a.example/simple https://b.example/simple\ncert = /etc/ca.pem\n"
        "[install]\nfind-links = /from/install\nconstraint = /etc/c1.txt\n"
    )
    env = pip_env(tmp_path, repo, config, PIP_EXTRA_INDEX_URL="file:///opt/x/simple", PIP_DEFAULT_TIMEOUT="90")
    del env["PIP_FIND_LINKS"], env["PIP_NO_INDEX"]
    python = make_venv(tmp_path / "venv")
    settings = pip_settings(python, env)
    assert settings.index_url == "https://global.example/simple"
    assert settings.find_links == ("/from/install",)
    assert settings.extra_index_urls == ("file:///opt/x/simple",)
    assert settings.constraints == ("/etc/c1.txt",)
    assert settings.cert == "/etc/ca.pem" and settings.timeout == "90"
    assert settings.untranslated == () and not settings.no_index


def test_a_setting_uv_cannot_take_is_named() -> None:
    settings = parse_pip_config(
        "global.find-links='/w'\ninstall.user='true'\n:env:.no_build_isolation='0'\nfreeze.all='1'\nnot a line\n"
    )
    assert settings.find_links == ("/w",)
    # freeze's section never applies to installs; "no_build_isolation" is pip's no-build-isolation
    assert settings.untranslated == (":env:.no-build-isolation", "install.user")


def test_uv_options_give_uv_what_pip_settings_give_pip() -> None:
    settings = PipSettings(
        index_url="https://i.example/simple",
        extra_index_urls=("file:///opt/pypi/simple",),
        find_links=("/opt/wheels",),
        constraints=("/etc/xdg/pip/constraints.txt",),
        only_binary=(":all:",),
        trusted_hosts=("i.example",),
        no_cache=True,
    )
    options = uv_options(settings, hashed=False)
    assert options[:3] == ["--no-config", "--index-strategy", "unsafe-best-match"]
    pairs = list(zip(options[3::2], options[4::2], strict=False))
    assert ("--index-url", "https://i.example/simple") in pairs
    assert ("--extra-index-url", "file:///opt/pypi/simple") in pairs
    assert ("--find-links", "/opt/wheels") in pairs
    assert ("--constraint", "/etc/xdg/pip/constraints.txt") in pairs
    assert ("--only-binary", ":all:") in pairs and ("--allow-insecure-host", "i.example") in pairs
    assert options[-1] == "--no-cache"
    # A hashed install gets no unpinned constraint (uv refuses them there); no-index drops indexes.
    hashed = uv_options(PipSettings(no_index=True, index_url="https://x", constraints=("c",)), hashed=True)
    assert hashed == ["--no-config", "--index-strategy", "unsafe-best-match", "--no-index"]


def test_uv_never_sees_uv_settings_that_change_what_it_installs() -> None:
    env = {
        "PATH": "/bin",
        "UV_INDEX_URL": "https://elsewhere.example/simple",
        "UV_TORCH_BACKEND": "cu128",
        "UV_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cu128",
        "UV_CACHE_DIR": "/c",
    }
    out = uv_environment(PipSettings(cert="/ca.pem", timeout="180", proxy="http://p:3128"), env)
    assert {k for k in out if k.startswith("UV_")} == {"UV_CACHE_DIR", "UV_HTTP_TIMEOUT"}
    assert out["SSL_CERT_FILE"] == "/ca.pem" and out["UV_HTTP_TIMEOUT"] == "180"
    assert out["HTTPS_PROXY"] == "http://p:3128" and out["PATH"] == "/bin"


# -- choosing uv ------------------------------------------------------------------------------


def _fake_uv(path: Path, version: str, install_status: int = 0, junk: str = "") -> Path:
    """An executable that answers ``--version`` like uv and fails (or not) anything else."""
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "uv {version} (fake)"; exit 0; fi\n'
        + (f'touch "{junk}"\n' if junk else "")
        + f'echo "fake uv: nothing done" >&2; exit {install_status}\n'
    )
    path.chmod(0o755)
    return path


def test_installer_choice_is_checked() -> None:
    with pytest.raises(InstallError, match="expected auto, pip, uv or a path"):
        installer.installer_choice({"TRAINFAIL_INSTALLER": "conda"})
    assert find_uv({"TRAINFAIL_INSTALLER": "pip"}) == (None, "TRAINFAIL_INSTALLER=pip")


def test_an_old_or_broken_uv_is_not_used(tmp_path: Path) -> None:
    old = _fake_uv(tmp_path / "old-uv", "0.4.30")
    uv, why = find_uv({"TRAINFAIL_INSTALLER": str(old)})
    assert uv is None and "uv 0.4.30, older than 0.9" in why
    broken = tmp_path / "broken-uv"
    broken.write_text("#!/bin/sh\necho hello\n")
    broken.chmod(0o755)
    uv, why = find_uv({"TRAINFAIL_INSTALLER": str(broken)})
    assert uv is None and "answered 'hello'" in why
    assert find_uv({"TRAINFAIL_INSTALLER": str(tmp_path / "nowhere")}) == (
        None,
        f"TRAINFAIL_INSTALLER={tmp_path / 'nowhere'} is not an executable file",
    )


# -- installing a lock ------------------------------------------------------------------------


def test_uv_and_pip_install_the_same_lock_to_the_same_packages_and_files(
    tmp_path: Path, repo: Repo, uv_path: Path, make_venv: MakeVenv
) -> None:
    """The property runtimes rely on: the installer changes how fast, never what. Same
    ``pip freeze --all``, same files with the same bytes (bytecode included), a working script."""
    log = tmp_path / "install.log"
    results = {}
    for name, choice in (("uv", str(uv_path)), ("pip", "pip")):
        python = make_venv(tmp_path / name)
        env = pip_env(tmp_path, repo, TRAINFAIL_INSTALLER=choice)
        done = install_locked(python, repo.lock, repo.pins, log=log, env=env, reset=lambda: None)
        assert done.installer.startswith(name) and done.fallback == ("" if name == "uv" else "TRAINFAIL_INSTALLER=pip")
        script = subprocess.run([str(python.parent / "tf-tool")], capture_output=True, text=True, check=True)
        assert script.stdout == "42\n"
        results[name] = (freeze(python), installed_files(python))
    assert results["uv"][0] == results["pip"][0]
    assert "tf-base==1.0" in results["uv"][0] and "tf-tool==2.3" in results["uv"][0]
    uv_files, pip_files = results["uv"][1], results["pip"][1]
    assert sorted(set(uv_files) ^ set(pip_files)) == []
    assert {k for k in uv_files if uv_files[k] != pip_files[k]} == set()
    assert any(k.endswith("tf_tool/__pycache__/__init__.cpython-311.pyc") for k in uv_files)


def test_a_wrong_hash_is_refused_by_uv_and_then_by_pip(
    tmp_path: Path, repo: Repo, uv_path: Path, make_venv: MakeVenv
) -> None:
    text = repo.lock.read_text()
    digest = text.split("sha256:")[1][:64]
    repo.lock.write_text(text.replace(digest, "0" * 64))
    python = make_venv(tmp_path / "venv")
    resets: list[int] = []
    env = pip_env(tmp_path, repo, TRAINFAIL_INSTALLER=str(uv_path))
    with pytest.raises(InstallError, match="pip could not install test.lock"):
        install_locked(python, repo.lock, repo.pins, log=tmp_path / "log", env=env, reset=lambda: resets.append(1))
    assert resets == [1]  # uv failed first; the venv was made afresh for pip
    log = (tmp_path / "log").read_text()
    assert "uv" in log and "THESE PACKAGES DO NOT MATCH THE HASHES" in log


def test_a_failing_uv_falls_back_to_pip_in_a_fresh_venv(tmp_path: Path, repo: Repo, make_venv: MakeVenv) -> None:
    python = make_venv(tmp_path / "venv")
    junk = python.parent.parent / "half-installed"
    fake = _fake_uv(tmp_path / "uv", "0.13.9", install_status=2, junk=str(junk))

    def reset() -> None:
        junk.unlink()

    env = pip_env(tmp_path, repo, TRAINFAIL_INSTALLER=str(fake))
    lines: list[str] = []
    done = install_locked(
        python, repo.lock, repo.pins, log=tmp_path / "log", env=env, reset=reset, progress=lines.append
    )
    assert done.installer == "pip"
    assert done.fallback == "uv 0.13.9 failed (exit 2: fake uv: nothing done)"
    assert lines[-1] == f"installing test.lock with pip (2 packages, hash-checked): {done.fallback}"
    assert not junk.exists() and "tf-tool==2.3" in freeze(python)


def test_uv_required_but_failing_is_an_error_not_a_fallback(
    tmp_path: Path, repo: Repo, uv_path: Path, make_venv: MakeVenv
) -> None:
    text = repo.lock.read_text()
    repo.lock.write_text(text.replace(text.split("sha256:")[1][:64], "0" * 64))
    python = make_venv(tmp_path / "venv")
    env = pip_env(tmp_path, repo, TRAINFAIL_INSTALLER="uv", PATH=f"{uv_path.parent}:{os.environ['PATH']}")
    resets: list[int] = []
    with pytest.raises(InstallError, match=r"TRAINFAIL_INSTALLER=uv but uv cannot install here: uv \S+ failed"):
        install_locked(python, repo.lock, repo.pins, log=tmp_path / "log", env=env, reset=lambda: resets.append(1))
    assert "-m pip install" not in (tmp_path / "log").read_text()


def test_an_environment_holding_more_than_the_lock_is_refused(tmp_path: Path, repo: Repo, make_venv: MakeVenv) -> None:
    """The check after every install: an installer that brings an extra distribution (say a CUDA
    library beside torch) or another version than the locked one is refused."""
    python = make_venv(tmp_path / "venv")
    make_wheel(repo.wheels, "nvidia-stray-cu12", "12.8", {"nvidia_stray/__init__.py": ""})
    greedy = tmp_path / "uv"
    greedy.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "uv 0.13.9 (greedy)"; exit 0; fi\n'
        f'exec "{python}" -m pip install -q --no-index --find-links "{repo.wheels}" tf-base tf-tool nvidia-stray-cu12\n'
    )
    greedy.chmod(0o755)
    env = pip_env(tmp_path, repo, TRAINFAIL_INSTALLER=str(greedy))
    with pytest.raises(InstallError, match=r"uv 0\.13\.9 installed something else than the lock: "
                       r"nvidia-stray-cu12==12\.8 is installed but not locked$"):  # fmt: skip
        install_locked(python, repo.lock, repo.pins, log=tmp_path / "log", env=env, reset=lambda: None)
    wrong = (Pin("tf-base", "1.0"), Pin("tf-tool", "2.4"))
    python = make_venv(tmp_path / "venv2")
    env = pip_env(tmp_path, repo, TRAINFAIL_INSTALLER="pip")
    with pytest.raises(InstallError, match=r"tf-tool: 2\.3 installed, 2\.4 locked"):
        install_locked(python, repo.lock, wrong, log=tmp_path / "log", env=env, reset=lambda: None)


def test_pips_constraints_are_checked_against_the_lock_before_uv_runs(
    tmp_path: Path, repo: Repo, uv_path: Path, make_venv: MakeVenv
) -> None:
    """uv cannot take unpinned constraints with --require-hashes: a constraint the lock meets lets
    uv install; one it breaks goes to pip, which refuses it; one we cannot read goes to pip."""
    python = make_venv(tmp_path / "venv")
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(
        "# like /etc/xdg/pip/constraints.txt\ntf-tool<=2.3\nother-package<1 ; python_version < '3'\n"
    )
    env = pip_env(tmp_path, repo, TRAINFAIL_INSTALLER=str(uv_path), PIP_CONSTRAINT=str(constraints))
    done = install_locked(python, repo.lock, repo.pins, log=tmp_path / "log", env=env, reset=lambda: None)
    assert done.installer.startswith("uv")

    constraints.write_text("tf-tool<2\n")
    python = make_venv(tmp_path / "venv2")
    with pytest.raises(InstallError, match="pip could not install"):
        install_locked(python, repo.lock, repo.pins, log=tmp_path / "log2", env=env, reset=lambda: None)
    assert "# installer: uv" in (tmp_path / "log2").read_text()

    constraints.write_text("-r more-constraints.txt\n")
    python = make_venv(tmp_path / "venv3")
    lines: list[str] = []
    with pytest.raises(InstallError):  # pip cannot read the included file either
        install_locked(python, repo.lock, repo.pins, log=tmp_path / "log3", env=env, reset=lambda: None,
                       progress=lines.append)  # fmt: skip
    assert "'-r more-constraints.txt' is not a plain requirement" in lines[-1]


def test_a_pip_setting_uv_cannot_take_sends_the_install_to_pip(
    tmp_path: Path, repo: Repo, uv_path: Path, make_venv: MakeVenv
) -> None:
    python = make_venv(tmp_path / "venv")
    env = pip_env(tmp_path, repo, "[install]\nno-build-isolation = false\n", TRAINFAIL_INSTALLER=str(uv_path))
    done = install_locked(python, repo.lock, repo.pins, log=tmp_path / "log", env=env, reset=lambda: None)
    assert done.installer == "pip"
    assert done.fallback == "pip's configuration sets install.no-build-isolation, which uv cannot be given"


# -- the module itself --------------------------------------------------------------------------


def test_the_installer_needs_nothing_but_the_standard_library() -> None:
    """The Makefile runs it by path before any dependency exists, and the Docker image build runs
    it in a bare base image: it must not import gym_trainfail or any third-party package."""
    tree = ast.parse(Path(installer.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - {"uv"} <= set(sys.stdlib_module_names) | {"__future__"}


def test_the_uv_extra_is_the_requirement_setup_installs() -> None:
    extras = tomllib.loads((SOURCE_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["uv"] == [installer.UV_REQUIREMENT]


def test_the_project_venv_gets_uv_and_the_package_with_it(tmp_path: Path, uv_path: Path) -> None:
    """``installer.py venv``: a venv with a small project installed editable by uv, given the uv
    to use (this test does not install uv from an index)."""
    project = tmp_path / "proj"
    (project / "proj_mod").mkdir(parents=True)
    (project / "proj_mod" / "__init__.py").write_text("X = 1\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "proj"\nversion = "0.1"\n[project.optional-dependencies]\nfast = []\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "TRAINFAIL_PHASE_LOG"}
    env.update(TRAINFAIL_INSTALLER=str(uv_path), TRAINFAIL_PHASE_LOG=str(tmp_path / "phases.tsv"))
    result = subprocess.run(
        [sys.executable, "-I", installer.__file__, "venv", str(tmp_path / "venv"), "--extras", "fast",
         "--project", str(project)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "setup: installed gym-trainfail[fast] in" in result.stderr and "(uv " in result.stderr
    check = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c", "import proj_mod; print(proj_mod.X)"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert check.stdout == "1\n"
    name, start, end, note = (tmp_path / "phases.tsv").read_text().splitlines()[0].split("\t")
    assert name == "package[fast]" and float(end) >= float(start) and note.startswith("uv ")
