"""The fleet command (tools/fleet.py, docs/SYNC.md "The fleet simulation")
prints its figures and writes its plot and its figures: a tiny fleet at a high time scale (a
few seconds), its output in a temporary directory. Whether this tiny fleet has a herd is not
the point (a handful of devices is too few for a steady rate), so the exit status may be 0 or
1 as documented, as long as it agrees with the figures."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from conftest import BINDING, REPO, TEST_INSTALLED

FLEET = os.path.join(REPO, "tools", "fleet.py")
SVG_NS = "{http://www.w3.org/2000/svg}"

# Simulated seconds: 10 warm-up (one period), 10 before, 10 outage, 20 after; x10: 5 s of run
# plus the workers' start-up (3 s).
SCENARIO = {"period": 10, "before": 10, "outage": 10, "after": 20}


def test_fleet_prints_its_figures_and_writes_its_plot(tmp_path) -> None:
    env = dict(os.environ)
    if not TEST_INSTALLED:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [BINDING, env.get("PYTHONPATH")]))
    plot, figures = tmp_path / "fleet.svg", tmp_path / "fleet.json"
    command = [sys.executable, FLEET, "--clients", "6", "--processes", "2", "--time-scale", "10",
               "--retry-max", "10", "--svg", str(plot), "--json", str(figures)]
    for name, value in SCENARIO.items():
        command += [f"--{name}", str(value)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=50, env=env,
                            cwd=str(tmp_path))
    out = result.stdout
    assert result.returncode in (0, 1), out + result.stderr   # 2: a worker failed

    # The figures, printed.
    for label in ("steady rate before the outage", "rate during the outage",
                  "rate after (second half)", "peak after recovery, 1 s",
                  "peak after recovery, 5 s mean", "goal: peak <= 2x steady"):
        assert label in out, out
    assert re.search(r"devices\s+6\n", out), out
    assert "outage starts" in out and "the service is back" in out, out
    ratio = re.search(r"peak after recovery, 1 s\s+[\d.]+ requests/s\s+= ([\d.]+)x steady", out)
    assert ratio, out
    assert re.search(r"peak after recovery, 5 s mean\s+[\d.]+ requests/s\s+= [\d.]+x steady", out), out
    assert f"plot                             {plot}" in out
    assert f"figures                          {figures}" in out

    # The figures, written: the same as printed, the exit status agreeing with the goal.
    data = json.loads(figures.read_text(encoding="utf-8"))
    for key in ("steady_rate", "outage_rate", "after_rate", "peak_after_recovery_1s",
                "peak_after_recovery_5s", "peak_ratio_1s", "peak_ratio_5s"):
        assert isinstance(data[key], (int, float)) and data[key] >= 0, key
    assert float(ratio.group(1)) == data["peak_ratio_1s"]
    assert re.search(rf"steady rate before the outage\s+{data['steady_rate']:.1f} requests/s", out), out
    assert data["steady_rate"] > 0                       # the devices did refresh
    assert result.returncode == (0 if data["peak_ratio_1s"] <= 2 else 1)
    assert ("no herd" in out) == (result.returncode == 0)
    assert (data["clients"], data["processes"], data["time_scale"]) == (6, 2, 10.0)
    assert len(data["rates_per_second"]) == sum(SCENARIO.values())
    assert sum(data["rates_per_second"]) > 0

    # The plot: well-formed SVG with the outage shaded and the rates drawn.
    root = ET.parse(plot).getroot()
    assert root.tag == f"{SVG_NS}svg"
    texts = [t.text or "" for t in root.iter(f"{SVG_NS}text")]
    assert "outage (503)" in texts
    assert any(t.startswith("6 devices, 10 s outage") for t in texts), texts
    lines = list(root.iter(f"{SVG_NS}polyline"))
    assert len(lines) == 2                               # each second, and the 5-second mean
    for line in lines:
        assert len(line.get("points", "").split()) == sum(SCENARIO.values())
