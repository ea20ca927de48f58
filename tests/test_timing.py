"""Named phases of a run, timed into the enclosing record."""

from __future__ import annotations

import time

from hf_textcluster.timing import own_phases, phase, recording_phases


def test_phases_nest_add_up_and_cost_nothing_outside_a_record():
    with phase("ignored"):  # no record: nothing kept anywhere
        pass
    with recording_phases() as seconds:
        for _ in range(2):
            with phase("train"), phase("init"):
                time.sleep(0.01)
    assert set(seconds) == {"train", "train/init"}
    assert seconds["train/init"] >= 0.02  # entered twice: added up
    assert seconds["train"] >= seconds["train/init"]


def test_a_run_inside_another_records_into_the_outer_run_under_its_phase():
    with recording_phases() as outer, phase("contrastive"), recording_phases() as inner:
        with phase("steps"):
            pass
        own = own_phases(inner)
    assert inner is outer and "contrastive/steps" in outer
    assert set(own) == {"steps"}  # the nested run's own phases, its prefix cut off
    with recording_phases() as fresh:
        pass
    assert fresh == {}  # a new record once the outer one ended
