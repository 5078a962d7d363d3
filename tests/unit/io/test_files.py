"""io/files.AtomicFile, the one way outputs are written: a symlink's target is replaced (the link
stays), a device or FIFO is written in place, a replaced file keeps its mode, a new file gets the
umask's, and an aborted write leaves the destination as it was. Each writer goes through it."""
import os
import stat
import threading

import pytest

from factjudge.io.files import AtomicFile, write_atomic
from factjudge.reports.facts_csv import FactsCsvWriter


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def only(folder):
    return sorted(p.name for p in folder.iterdir())


def test_commit_replaces_and_keeps_the_mode(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old")
    os.chmod(out, 0o640)
    with AtomicFile(out) as f:
        f.handle.write("new")
        assert out.read_text() == "old"  # a reader never sees half an output
    assert out.read_text() == "new" and mode_of(out) == 0o640
    assert only(tmp_path) == ["out.txt"]


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "sub" / "new.txt", "x")  # the folder is made too
    finally:
        os.umask(old)
    assert mode_of(tmp_path / "sub" / "new.txt") == 0o640


def test_an_exception_leaves_the_destination_and_no_temporary(tmp_path):
    out = tmp_path / "out.bin"
    out.write_bytes(b"old")
    with pytest.raises(RuntimeError), AtomicFile(out, binary=True) as f:
        f.handle.write(b"half")
        raise RuntimeError
    assert out.read_bytes() == b"old" and only(tmp_path) == ["out.bin"]


def test_a_symlink_keeps_its_link_and_its_target_is_replaced(tmp_path):
    real, link = tmp_path / "real.csv", tmp_path / "link.csv"
    real.write_text("old")
    os.chmod(real, 0o600)
    link.symlink_to(real)
    with FactsCsvWriter(link, fields=[]) as w:   # facts.csv goes through the same writer
        assert w.rows == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == b"doc_id,side,id,fact_type,status,in_scope,matched_ids,description," \
                                b"reasoning,linked_reasoning,votes,category,partner,differ,closeness,granularity\r\n"
    assert mode_of(real) == 0o600


def test_dev_null_is_written_in_place(tmp_path):
    with AtomicFile("/dev/null", binary=True) as f:
        f.handle.write(b"discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with FactsCsvWriter("/dev/null") as w:   # its spool goes to the system's temporary folder
        w.add({"doc_id": "d", "gold_facts": [{"id": "1", "fact_type": "t", "status": "FN"}],
               "predicted_facts": []})


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    with AtomicFile(fifo) as f:
        f.handle.write("through the pipe\n")
    reader.join(10)
    assert got == ["through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert only(tmp_path) == ["pipe"]
