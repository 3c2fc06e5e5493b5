"""The ``rejoining`` marker with a deferred disk journal: the loop decides, the disk worker unlinks later, and
nothing the loop asks in between looks at the file (a second ``rejoined`` while the worker unlinked it crashed
a voter with "no such file" in the chaos lab)."""

from __future__ import annotations

from .helpers import open_log


def test_rejoined_twice_while_the_worker_unlinks_the_marker(tmp_path):
    log = open_log(tmp_path)
    log.mark_rejoining("fresh directory", vote_floor=(3, 40))
    log.journal.deferred = True
    assert log.rejoining and log.vote_floor == (3, 40)
    log.rejoined()
    assert not log.rejoining and log.vote_floor is None     # decided at once, before the unlink ran
    assert log.rejoin_marker.exists()                        # the unlink is the worker's
    log.journal.run()
    assert not log.rejoin_marker.exists()
    log.rejoined()                                           # again, with the file gone: nothing to do
    assert not log.rejoining


def test_a_new_marker_survives_an_unlink_still_queued(tmp_path):
    log = open_log(tmp_path)
    log.mark_rejoining("first")
    log.journal.deferred = True
    log.rejoined()                 # unlink queued
    log.mark_rejoining("again")    # written before the worker ran
    log.journal.run()
    assert log.rejoin_marker.exists() and log.rejoining
    reopened = open_log(tmp_path)
    assert reopened.rejoining and reopened.vote_floor is None
