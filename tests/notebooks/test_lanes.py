"""Two lanes for ``contextecho paper`` (``notebooks/lanes.py``): every notebook runs once; the
second lane takes only those allowed there, from the back, in a thread of its own, and hands back
what must call a model; a failure in either lane stops both and is raised once; the console
keeps the two lanes' lines apart."""
import io
import threading
import time

import pytest

from contextecho.notebooks.lanes import Console, HandBack, run_lanes

NAMES = ["panel", "compaction", "onset", "cape", "anchor", "published"]


class Lanes:
    """Fake lanes that record who ran what, in which thread; ``hand_back`` and ``fail`` by name."""

    def __init__(self, hand_back=(), fail=(), meet=False, first_takes_s=0.0):
        self.ran: list[tuple[str, str]] = []
        self.threads: dict[str, set[int]] = {"first": set(), "second": set()}
        self.hand_back, self.fail = set(hand_back), dict(fail)
        self.lock = threading.Lock()
        # both lanes inside a notebook at once, or a lane waits for ever: they do run side by side
        self.barrier = threading.Barrier(2, timeout=10) if meet else None
        self.first_takes_s = first_takes_s

    def _run(self, lane, name):
        with self.lock:
            lane_first = not self.threads[lane]
            self.threads[lane].add(threading.get_ident())
        if self.barrier is not None and lane_first:
            self.barrier.wait()
        if lane == "second" and name in self.hand_back:
            raise HandBack(name)
        if (lane, name) in self.fail or name in self.fail:
            raise self.fail.get((lane, name)) or self.fail[name]
        with self.lock:
            self.ran.append((lane, name))

    def first(self, name):
        time.sleep(self.first_takes_s)
        self._run("first", name)

    def second(self, name):
        self._run("second", name)


def test_every_notebook_runs_once_the_second_lane_from_the_back_in_a_thread_of_its_own():
    lanes = Lanes(meet=True)
    run_lanes(NAMES, lanes.first, lanes.second, {"cape", "published", "compaction"}.__contains__)
    assert sorted(name for _, name in lanes.ran) == sorted(NAMES)
    second = [name for lane, name in lanes.ran if lane == "second"]
    first = [name for lane, name in lanes.ran if lane == "first"]
    assert second and second[0] == "published" and set(second) <= {"cape", "published", "compaction"}
    assert first == [name for name in NAMES if name in first]  # the first lane keeps the order
    assert lanes.threads["first"] == {threading.get_ident()} and threading.get_ident() not in lanes.threads["second"]


def test_without_a_notebook_for_the_second_lane_no_thread_is_started():
    lanes, before = Lanes(), threading.active_count()
    run_lanes(NAMES, lanes.first, lambda name: pytest.fail(f"{name} ran in the second lane"), lambda name: False)
    assert [name for _, name in lanes.ran] == NAMES and threading.active_count() == before


def test_a_notebook_handed_back_is_run_by_the_first_lane_and_not_tried_again():
    lanes = Lanes(hand_back={"published", "cape"})
    tried = []
    run_lanes(NAMES, lanes.first, lambda name: tried.append(name) or lanes.second(name),
              {"cape", "published"}.__contains__)
    assert sorted(tried) == ["cape", "published"]  # each tried once beside, then handed back
    assert sorted(lanes.ran) == sorted(("first", name) for name in NAMES)


def test_the_first_lane_waits_for_a_notebook_the_second_may_hand_back():
    started, release = threading.Event(), threading.Event()
    ran = []

    def second(name):
        started.set()
        release.wait(10)
        raise HandBack(name)

    def first(name):
        ran.append(name)
        if name == "panel":  # the queue is empty now; the second lane holds "onset"
            assert started.wait(10)
            threading.Timer(0.2, release.set).start()

    run_lanes(["panel", "onset"], first, second, {"onset"}.__contains__)
    assert ran == ["panel", "onset"]


@pytest.mark.parametrize("where", ["first", "second"])
def test_a_failure_in_either_lane_stops_both_and_is_raised_once(where):
    boom = RuntimeError("cell failed")
    lanes = Lanes(fail={(where, "onset" if where == "first" else "published"): boom}, first_takes_s=0.1)
    with pytest.raises(RuntimeError, match="cell failed") as raised:
        run_lanes(NAMES, lanes.first, lanes.second, {"published", "anchor"}.__contains__)
    assert raised.value is boom
    first = [name for lane, name in lanes.ran if lane == "first"]
    if where == "first":  # panel, compaction, then onset failed; no one ran cape
        assert first == ["panel", "compaction"] and "cape" not in [name for _, name in lanes.ran]
    else:  # published failed at once: the first lane ends the notebook it is in, and takes no other
        assert first in ([], ["panel"]) and len(lanes.ran) == len(first)


def test_ctrl_c_in_the_first_lane_is_raised_at_once():
    release = threading.Event()
    lanes = Lanes(fail={("first", "panel"): KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        run_lanes(NAMES, lanes.first, lambda name: release.wait(10), {"published"}.__contains__)
    release.set()


def test_the_console_starts_each_block_on_a_line_of_its_own():
    out, err = io.StringIO(), io.StringIO()
    console = Console(out, err)
    live_out, live_err = console.live()
    live_out.write("[panel:targets] calls=4\n")
    live_err.write("\rpanel:judges:  50%|#####     | 1/2")  # a progress bar, its line unfinished
    console.block("[14/14] notebook published (from the cache) ...\n      published: 3 s\n")
    live_err.write("\rpanel:judges: 100%|##########| 2/2\n")
    console.block("      panel: 5 s")
    assert out.getvalue() == ("[panel:targets] calls=4\n\n[14/14] notebook published (from the cache) ...\n"
                              "      published: 3 s\n      panel: 5 s\n")
    assert err.getvalue() == "\rpanel:judges:  50%|#####     | 1/2\rpanel:judges: 100%|##########| 2/2\n"
