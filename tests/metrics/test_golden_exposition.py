"""The exposition, byte for byte, of a run over records of every kind at every lag.granularity (golden_exposition.py),
against the texts kept in tests/metrics/data: a refactoring of the exporter must not change one byte of it."""
from __future__ import annotations

import gzip

import pytest

from rebalance_monitor.metrics.catalogue import LAG_GRANULARITIES

from helpers.golden_exposition import as_text, golden_path, scenario


@pytest.mark.parametrize("granularity", LAG_GRANULARITIES)
def test_exposition_is_the_golden_one(granularity):
    want = golden_path(granularity).read_text(encoding="utf-8")
    got = as_text(scenario(granularity))
    assert got == want


@pytest.mark.parametrize("granularity", LAG_GRANULARITIES)
def test_rendering_on_scrape_gives_the_same_text(granularity):
    """prerender off: each scrape renders what changed; the texts are the same."""
    assert as_text(scenario(granularity, prerender=False)) == golden_path(granularity).read_text(encoding="utf-8")


def test_the_golden_run_covers_every_record_kind_and_family():
    text = golden_path("partition").read_text(encoding="utf-8")
    from rebalance_monitor.metrics.catalogue import CATALOGUE

    samples = {line.split("{", 1)[0].split(" ", 1)[0] for line in text.splitlines()
               if line and not line.startswith(("#", "====="))}
    for spec in CATALOGUE:
        names = {spec.name + s for s in ("_bucket", "_count", "_sum")} if spec.type == "histogram" else {spec.name}
        assert names & samples, f"the golden run has no sample of {spec.name}"


def test_bytes_and_gzip_are_the_text():
    from rebalance_monitor.metrics.updater import MetricsUpdater
    from rebalance_monitor.metrics.docs import sample_records

    u = MetricsUpdater(clock=lambda: 1_700_000_000.0)
    u.apply(sample_records(), now_ms=1_700_000_000_000)
    text = u.render()
    assert u.render_bytes(False) == (text.encode(), None)
    body, enc = u.render_bytes(True)
    assert enc == "gzip" and gzip.decompress(body) == text.encode()
