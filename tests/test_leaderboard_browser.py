"""The leaderboard page in a real headless Chromium (the system's, driven over the DevTools
protocol on a pipe, stdlib only): no text inside a figure overlaps another or leaves its figure,
no console error, the compact table sorts by any column, and a screenshot is kept under
``test-artifacts/`` (git-ignored) for a person to look at."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.batch import RunLayout, make_plan, resolve_cases, write_plan
from gym_trainfail.batch.status import Attempt, EpisodeStatus, write_status
from gym_trainfail.files import write_json
from gym_trainfail.leaderboard import render_leaderboard
from tests.test_leaderboard import _adjudication, _diagnosis

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
#: Registered cases with long names, three agents, both arms, three trials (every interval small-n).
CASES = ["TrainFail/DDPTokenAverage-v1", "TrainFail/FSDPSourceCoherence-v2", "TrainFail/TPClipGradNorm-v1"]
AGENTS = ["study", "reference", "noop"]

#: Runs in the page: every text element's layout box inside each figure, the pairs whose boxes
#: overlap by more than a pixel each way, and the texts that leave their figure.
OVERLAPS = """
(() => {
  const found = {figures: 0, texts: 0, overlaps: [], outside: []};
  for (const svg of document.querySelectorAll("figure svg")) {
    found.figures += 1;
    const name = svg.closest("figure").id;
    const frame = svg.getBoundingClientRect();
    const boxes = Array.from(svg.querySelectorAll("text"))
      .map((t) => ({text: t.textContent.trim(), r: t.getBoundingClientRect()}))
      .filter((t) => t.text && t.r.width > 0 && t.r.height > 0);
    found.texts += boxes.length;
    boxes.forEach((a, i) => {
      if (a.r.left < frame.left - 1 || a.r.right > frame.right + 1 || a.r.top < frame.top - 1
          || a.r.bottom > frame.bottom + 1) {
        found.outside.push([name, a.text]);
      }
      boxes.slice(i + 1).forEach((b) => {
        const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
        const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
        if (w > 1 && h > 1) { found.overlaps.push([name, a.text, b.text]); }
      });
    });
  }
  return found;
})()
"""

#: Sorts the compact table by a column (clicking its header ``clicks`` times); the column's cells.
SORT = """
((column, clicks) => {
  const table = document.querySelector("section table.sortable");
  const header = table.tHead.rows[0].cells[column];
  for (let i = 0; i < clicks; i++) { header.click(); }
  return {state: header.getAttribute("aria-sort"),
          cells: Array.from(table.tBodies[0].rows, (row) => [row.cells[column].getAttribute("data-sort"),
                                                              row.cells[column].textContent.trim()])};
})
"""


class DevTools:
    """Chromium's DevTools protocol over ``--remote-debugging-pipe`` (fd 3 in, fd 4 out)."""

    def __init__(self, chromium: str, profile: Path) -> None:
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        # the browser's ends must be its fds 3 and 4: copies at 10 or above are passed down, and
        # a tiny trampoline moves them into place and becomes Chromium
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands_read, replies_write)]
        os.close(commands_read)
        os.close(replies_write)
        trampoline = (
            "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
            "os.execv(sys.argv[3], sys.argv[3:])"
        )
        profile.mkdir(parents=True, exist_ok=True)
        self.log = profile / "chromium.log"
        flags = ["--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--hide-scrollbars", f"--user-data-dir={profile}", "about:blank"]  # fmt: skip
        with self.log.open("wb") as log:  # Chromium logs a lot (D-Bus): a file never fills up
            self.process = subprocess.Popen(
                [sys.executable, "-c", trampoline, *map(str, high), chromium, *flags], pass_fds=high,
                stdout=subprocess.DEVNULL, stderr=log,
            )  # fmt: skip
        for fd in high:
            os.close(fd)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def send(self, method: str, timeout: float = 60.0, **params: Any) -> dict[str, Any]:
        """Call ``method`` (in the attached page's session, once there is one) and wait for its reply."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self.session is not None and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, event: str, timeout: float = 60.0) -> dict[str, Any]:
        """The first (already received or next) event called ``event``."""
        deadline = time.monotonic() + timeout
        while True:
            for index, seen in enumerate(self.events):
                if seen.get("method") == event:
                    return self.events.pop(index)
            self.events.append(self._receive(deadline))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception fails the test)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._replies], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError("Chromium did not answer over the DevTools pipe in time")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"Chromium closed the DevTools pipe; the end of its log:\n{tail}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def close(self) -> None:
        """Close the browser (politely, then by force) and the pipe."""
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):  # it may be gone already
            self.send("Browser.close", timeout=10)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._replies)


def _problems(events: list[dict[str, Any]]) -> list[str]:
    """Console errors, uncaught exceptions and error log entries among DevTools events."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            found.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"log: {params['entry']['text']} ({params['entry'].get('url', '')})")
    return found


def _board(root: Path) -> Path:
    """A synthetic batch made to crowd the figures: long case names, three agents whose costs and
    milestone times nearly coincide (0.26 s against 0.755 s), nothing solved by ``noop``,
    TrainCheck activated in some episodes, then rendered."""
    layout = RunLayout(root / "run")
    plan = write_plan(layout, make_plan(resolve_cases(CASES), ["control", "traincheck"], AGENTS, 3))
    for planned in plan.episodes:
        solved = planned.agent != "noop" and not (planned.agent == "study" and planned.trial == 3)
        base = {"study": 40.0, "reference": 20.0, "noop": 0.3}[planned.agent] + planned.trial
        seconds = base + (0.5 if planned.arm == "traincheck" else 0.0) + CASES.index(planned.case)
        times = {"pre_run_hypothesis": 0.26 if planned.arm == "control" else 0.755, "first_device_request": 0.3,
                 "first_valid_submission": seconds} if planned.agent != "noop" else {}  # fmt: skip
        if planned.agent == "study":
            times["runtime_supported_diagnosis"] = seconds / 2
        rank = (3 if planned.trial < 3 else 1) if planned.arm == "traincheck" and planned.agent == "study" else None
        diagnosis = _diagnosis(times, rank)
        adjudication = _adjudication(planned.id, planned.arm, planned.agent, planned.trial, solved, seconds,
                                     int(rank is not None), case=planned.case, diagnosis=diagnosis)  # fmt: skip
        write_status(layout, EpisodeStatus(planned.id, (Attempt(1, "done", 0.0, 1.0),)))
        write_json(layout.adjudication(planned.id), adjudication)
    out = root / "board"
    render_leaderboard(layout.root, out, title="Crowded leaderboard")
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevTools, Path]]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian chromium must be installed (scripts/bootstrap-system.sh --for-tests installs it)"
    root = tmp_path_factory.mktemp("browser")
    board = _board(root)
    tools = DevTools(chromium, root / "profile")
    try:
        target = tools.send("Target.createTarget", url="about:blank")["targetId"]
        tools.session = tools.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            tools.send(f"{domain}.enable")
        tools.send("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False)
        tools.send("Page.navigate", url=(board / "index.html").as_uri())
        tools.wait_for("Page.loadEventFired")
        tools.evaluate("document.fonts.ready.then(() => true)")
        yield tools, board
    finally:
        tools.close()


def test_no_text_in_a_figure_overlaps_another(browser: tuple[DevTools, Path]) -> None:
    tools, board = browser
    found = tools.evaluate(OVERLAPS)
    names = {p.stem for p in board.glob("*.svg")}
    assert names == {"pass-rate", "first-valid-time", "cost-success", "milestones", "traincheck-activated"}
    assert found["figures"] == len(names) and found["texts"] > 100
    assert found["overlaps"] == [] and found["outside"] == []
    # the check itself: a label printed over another's position is caught
    tools.evaluate("""(() => { const t = document.querySelector("#milestones svg text");
                      t.parentNode.appendChild(t.cloneNode(true)); })()""")
    crowded = tools.evaluate(OVERLAPS)["overlaps"]
    assert len(crowded) >= 1 and all(figure == "milestones" for figure, *_ in crowded)


def test_the_page_has_no_console_errors_and_a_screenshot_is_kept(browser: tuple[DevTools, Path]) -> None:
    tools, _ = browser
    assert tools.evaluate("document.title") == "Crowded leaderboard"
    assert tools.evaluate("document.querySelectorAll('script[src], link[href^=http], img[src^=http]').length") == 0
    shot = tools.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    ARTIFACTS.mkdir(exist_ok=True)
    png = base64.b64decode(shot["data"])
    (ARTIFACTS / "leaderboard-page.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000
    tools.evaluate("console.error('probe: the console is watched')")
    tools.wait_for("Runtime.consoleAPICalled", timeout=10)
    problems = _problems(tools.events)
    assert problems == [], problems
    tools.events.clear()


def test_the_compact_table_sorts_by_any_column(browser: tuple[DevTools, Path]) -> None:
    tools, _ = browser
    headers = tools.evaluate("Array.from(document.querySelector('section table.sortable').tHead.rows[0].cells, "
                             "(c) => c.textContent)")  # fmt: skip
    assert [h.replace("\u2011", "-") for h in headers] == [
        "case", "arm", "agent", "n", "pass rate [95% CI]", "first valid: adjusted s [95% CI]", "tokens",
        "solver device-s", "TrainCheck engagement"]  # fmt: skip
    first_valid = tools.evaluate(f"({SORT})(5, 1)")
    assert first_valid["state"] == "ascending"
    values = [float(v) for v, _ in first_valid["cells"] if v]
    assert values == sorted(values) and len(values) == 12  # study and reference solved, noop did not
    assert [text for v, text in first_valid["cells"][12:]] == ["—"] * 6  # missing last
    descending = tools.evaluate(f"({SORT})(5, 1)")
    assert descending["state"] == "descending"
    assert [float(v) for v, _ in descending["cells"] if v] == sorted(values, reverse=True)
    cases = tools.evaluate(f"({SORT})(0, 1)")["cells"]
    assert [text for _, text in cases] == sorted(text for _, text in cases)
    assert _problems(tools.events) == []


def test_the_committed_leaderboard_covers_every_case_and_its_figures_stay_legible(
    browser: tuple[DevTools, Path],
) -> None:
    """The page committed under ``leaderboards/scripted`` (``make leaderboard``), not a synthetic
    one: every registered case is on it, the study-traincheck agent too, and its real figures keep
    every label apart."""
    from gym_trainfail import registered_ids

    tools, _ = browser
    page = Path(__file__).resolve().parents[1] / "leaderboards" / "scripted" / "index.html"
    tools.events.clear()
    tools.send("Page.navigate", url=page.as_uri())
    tools.wait_for("Page.loadEventFired")
    tools.evaluate("document.fonts.ready.then(() => true)")
    rows = tools.evaluate("Array.from(document.querySelector('section table.sortable').tBodies[0].rows, "
                          "(r) => [r.cells[0].textContent, r.cells[2].textContent])")  # fmt: skip
    assert {case for case, _ in rows} == {i.split("/")[-1] for i in registered_ids()}, "regenerate it: make leaderboard"
    assert {agent for _, agent in rows} >= {"study", "study-traincheck", "reference", "noop"}
    found = tools.evaluate(OVERLAPS)
    assert found["figures"] >= 4 and found["texts"] > 100
    assert found["overlaps"] == [] and found["outside"] == []
    assert _problems(tools.events) == []
