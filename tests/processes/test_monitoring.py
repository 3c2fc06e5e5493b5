"""docs/monitoring: the alert rules pass promtool's checks and unit tests, the dashboard's queries parse,
and every metric either names exists in the /metrics of a running kraftwire cluster."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from tests.cli.tools import require_tool
from tests.ports import free_ports

from .harness import Cluster

MONITORING = Path(__file__).resolve().parents[2] / "docs" / "monitoring"
RULES = MONITORING / "kraftwire-alerts.yml"
RULE_TESTS = MONITORING / "kraftwire-alerts.test.yml"
DASHBOARD = MONITORING / "kraftwire-dashboard.json"
METRIC = re.compile(r"\b(?:kafka|process)_[a-z0-9_]+\b")


def rule_exprs() -> list[str]:
    """Every ``expr:`` of the rules file (inline or a folded ``>-`` block); promtool counts the rules."""
    lines = RULES.read_text().splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = re.match(r"(\s*)expr:\s*(.*)$", lines[i])
        i += 1
        if m is None:
            continue
        if m.group(2) not in (">-", ">", "|"):
            out.append(m.group(2))
            continue
        body = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(m.group(1))):
            body.append(lines[i].strip())
            i += 1
        out.append(" ".join(b for b in body if b))
    return out


def dashboard_exprs() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]


def test_alert_rules_pass_promtool_check_and_unit_tests() -> None:
    promtool = require_tool("promtool", "checks and unit-tests docs/monitoring's Prometheus rules")
    check = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {len(rule_exprs())} rules found" in check.stdout     # the extractor saw every rule
    tests = subprocess.run([promtool, "test", "rules", RULE_TESTS.name], capture_output=True, text=True,
                           timeout=120, cwd=MONITORING)
    assert tests.returncode == 0 and "SUCCESS" in tests.stdout, tests.stdout + tests.stderr


def test_dashboard_queries_are_valid_promql(tmp_path) -> None:
    promtool = require_tool("promtool", "parses the dashboard's PromQL")
    exprs = dashboard_exprs()
    assert len(exprs) >= 18
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:query{i}", "expr": e}
                                                         for i, e in enumerate(exprs)]}]}
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(json.dumps(rules))      # JSON is YAML
    check = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def scrape(port: int) -> set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


@pytest.mark.processes
def test_every_metric_in_the_dashboard_and_rules_is_exported(tmp_path) -> None:
    exprs = rule_exprs() + dashboard_exprs()
    for e in exprs:
        assert METRIC.search(e), f"no kraftwire metric in {e!r}: the check below would not cover it"
    wanted = {m for e in exprs for m in METRIC.findall(e)}
    c = Cluster(tmp_path, 3, combined=True)
    ports = free_ports(3)
    try:
        for node in (1, 2, 3):
            c.start(node, f"kraftwire.metrics.port={ports[node - 1]}")
        deadline = time.monotonic() + 60
        while True:
            try:
                admin = KafkaAdminClient(bootstrap_servers=[c.client_addr(n) for n in (1, 2, 3)],
                                         request_timeout_ms=5000)
                admin.create_topics([NewTopic("watched", 2, 3)])
                admin.close()
                break
            except Exception:  # noqa: BLE001 - the cluster is still starting
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        exported: set[str] = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not wanted <= exported:
            for port in ports:
                try:
                    exported |= scrape(port)
                except OSError:
                    pass
            time.sleep(0.5)
        assert wanted <= exported, f"not exported: {sorted(wanted - exported)}"
    finally:
        c.stop_all()
