"""``util.forked.beside``: the end of a run renders report.html in a forked child while the parent
writes the other files; whatever the child meets reaches the parent."""
import os
import time

import pytest

from factjudge.util.forked import beside

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def wait_for(path, seconds=10.0):
    end = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > end:
            raise TimeoutError(path)
        time.sleep(0.005)


def test_the_work_runs_in_another_process_while_the_body_runs(tmp_path):
    def work():
        wait_for(tmp_path / "body")  # only the body, running meanwhile, writes it
        (tmp_path / "work").write_text(str(os.getpid()))

    with beside(work, fork=True):
        (tmp_path / "body").write_text("")
    # leaving the block waited for the child
    assert int((tmp_path / "work").read_text()) != os.getpid()


def test_without_fork_the_work_runs_here_before_the_body(tmp_path):
    seen = []
    with beside(lambda: seen.append(os.getpid()), fork=False):
        assert seen == [os.getpid()]


def test_the_childs_exception_is_raised_in_the_parent():
    def work():
        raise FileNotFoundError(2, "No such file", "report.html")

    with pytest.raises(FileNotFoundError) as caught, beside(work, fork=True):
        pass
    assert caught.value.filename == "report.html"


class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("no")


def test_an_exception_that_does_not_pickle_is_named():
    def work():
        raise Unpicklable("half-written")

    with pytest.raises(RuntimeError, match="Unpicklable: half-written"), beside(work, fork=True):
        pass


def test_a_child_that_dies_is_an_error():
    with pytest.raises(RuntimeError, match="status 3"), beside(lambda: os._exit(3), fork=True):
        pass


def test_a_failing_body_waits_for_the_child_and_raises_its_own_error(tmp_path):
    def work():
        time.sleep(0.2)
        (tmp_path / "work").write_text("done")

    with pytest.raises(KeyError), beside(work, fork=True):
        raise KeyError("body")
    assert (tmp_path / "work").read_text() == "done"  # no child left behind, running


def test_what_the_work_returns_reaches_the_parent():
    for fork in (True, False):
        with beside(lambda: {"pid": os.getpid(), "items": list(range(100_000))}, fork=fork) as child:
            pass
        assert child.value["items"] == list(range(100_000))
        assert (child.value["pid"] != os.getpid()) == fork


def test_the_bodys_exception_wins_over_the_childs():
    def work():
        raise ValueError("the child's")

    with pytest.raises(KeyError, match="the body's"), beside(work, fork=True):
        raise KeyError("the body's")
