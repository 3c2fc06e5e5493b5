"""``kraftwire analytics diff``: Spark selects the image's rows; the result equals metadata-diff's."""

from __future__ import annotations

import pytest

from kraftwire.analytics.diff import PointError, image_at, offset_at_time
from kraftwire.analytics.report import load
from kraftwire.analytics.scenario import DEMO_START_MS, MINUTE
from kraftwire.cli import time_travel
from kraftwire.cli.metadata_shell import build_image, image_tree, provenance
from kraftwire.metadata.diff import diff_trees

pytestmark = pytest.mark.spark


def _shell_tree(demo_dir, offset: int) -> dict:
    src = time_travel.read_at(demo_dir, time_travel.Point(offset=offset))
    return image_tree(build_image(src), provenance(src))


def test_spark_images_and_diff_equal_the_shells(spark, demo_dir) -> None:
    df = load(spark, log_dir=str(demo_dir)).cache()
    assert offset_at_time(df, DEMO_START_MS + 5 * MINUTE) == 11
    trees = {}
    for offset in (7, 30, 45):          # 45: from the snapshot ending at 46; 7 and 30: from the segments
        image, prov = image_at(df, offset)
        trees[offset] = image_tree(image, prov)
        shell = _shell_tree(demo_dir, offset)
        assert diff_trees(shell, trees[offset]) == []
        assert prov["lastContainedOffset"] == str(offset)
    assert trees[45]["provenance"]["snapshot"] == "end offset 46"
    changes = diff_trees(trees[7], trees[45])
    assert changes == diff_trees(_shell_tree(demo_dir, 7), _shell_tree(demo_dir, 45)) and changes
    with pytest.raises(PointError, match="after the end of the log"):
        image_at(df, 470)
    with pytest.raises(PointError, match="before the oldest retained batch"):
        offset_at_time(df, DEMO_START_MS - 1)
