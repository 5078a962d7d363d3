"""``factjudge compare``: two extractors on the same gold, with a paired interval."""

from evalkit import fact, run_cli, write_jsonl

# --------------------------------------------------------------------------- compare


def test_compare_two_extractors_with_a_paired_interval(tmp_path):
    gold = [[fact(f"g{j}", value=str(100 * i + j)) for j in range(4)] for i in range(30)]
    good = [[dict(f, id=f"p{j}") for j, f in enumerate(g)] for g in gold]
    # the weaker extractor gets the last two values of every document wrong
    weak = [[dict(f, id=f"p{j}", value=str(9000 + j)) if j >= 2 else dict(f, id=f"p{j}")
             for j, f in enumerate(g)] for g in gold]
    for name, pred in (("weak", weak), ("good", good)):
        write_jsonl(tmp_path / f"{name}.jsonl", [
            {"doc_id": f"d{i}", "gold_facts": gold[i], "predicted_facts": pred[i]} for i in range(30)])
        proc = run_cli("eval", tmp_path / f"{name}.jsonl", "-o", tmp_path / name)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("compare", tmp_path / "weak", tmp_path / "good")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert rows["f1"].split()[1:4] == ["0.500", "1.000", "+0.500"]
    assert rows["f1"].endswith("yes: B is higher") and rows["recall"].endswith("yes: B is higher")
    assert "paired bootstrap over 30 documents, 1000 resamples, seed 0" in proc.stdout

    same = run_cli("compare", tmp_path / "good", tmp_path / "good")
    f1 = next(line for line in same.stdout.splitlines() if line.startswith("f1"))
    assert "+0.000" in f1 and "[+0.000, +0.000]" in f1 and f1.endswith(" no")

    assert "warning" not in proc.stderr  # same config, same judge
    (tmp_path / "narrow.yaml").write_text("entity_types: [revenue]\n", encoding="utf-8")
    proc = run_cli("eval", tmp_path / "good.jsonl", "-c", tmp_path / "narrow.yaml", "-o", tmp_path / "narrow")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("compare", tmp_path / "good", tmp_path / "narrow")
    assert "different judge configs (differing: entity_types)" in proc.stderr

    proc = run_cli("compare", tmp_path / "weak", tmp_path / "nowhere")
    assert proc.returncode == 2 and "not a finished eval output folder" in proc.stderr


def test_compare_never_replaces_a_page_it_did_not_write(tmp_path):
    """``compare -o DIR`` replaced a user's compare.md or compare.html in DIR without a word; it
    is refused in one line before anything is written (not the other page either), and compare's
    own pages of an earlier run, or an older version's, are written again."""
    write_jsonl(tmp_path / "d.jsonl", [{"doc_id": "d", "gold_facts": [fact("g1", value="1")],
                                        "predicted_facts": [fact("p1", value="1")]}])
    for name in ("a", "b"):
        assert run_cli("eval", tmp_path / "d.jsonl", "-o", tmp_path / name).returncode == 0
    for mine in ("compare.md", "compare.html"):
        folder = tmp_path / f"mine_{mine}"
        folder.mkdir()
        (folder / mine).write_text("my notes\n", encoding="utf-8")
        proc = run_cli("compare", tmp_path / "a", tmp_path / "b", "-o", folder)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == (f"factjudge: error: {folder / mine}: not a file factjudge compare wrote, which "
                               "it would replace: move it or give another -o\n")
        assert [p.name for p in folder.iterdir()] == [mine]
        assert (folder / mine).read_text(encoding="utf-8") == "my notes\n"

    own = tmp_path / "own"
    for _ in range(2):  # again into its own output folder
        proc = run_cli("compare", tmp_path / "a", tmp_path / "b", "-o", own)
        assert proc.returncode == 0, proc.stderr
    # pages as the first version wrote them: the same first line and title
    (own / "compare.md").write_text("# factjudge comparison\n\nA: a  \n", encoding="utf-8")
    (own / "compare.html").write_text('<!DOCTYPE html>\n<html><head><meta charset="utf-8">\n'
                                      "<title>factjudge comparison</title><style></style></head>\n",
                                      encoding="utf-8")
    assert run_cli("compare", tmp_path / "a", tmp_path / "b", "-o", own).returncode == 0
    assert "## By fact type" in (own / "compare.md").read_text(encoding="utf-8")




def test_compare_warns_when_a_run_records_no_judge_or_config(tmp_path):
    """A summary.json without its judge or config (an older or edited run) cannot show that the
    runs are alike: compare says so, naming the run, as agree does; it neither lists every key as
    differing (one run without them) nor stays silent (neither has them)."""
    import json
    write_jsonl(tmp_path / "d.jsonl", [{"doc_id": "d", "gold_facts": [fact("g1", value="1")],
                                        "predicted_facts": [fact("p1", value="1")]}])
    for name in ("a", "b"):
        assert run_cli("eval", tmp_path / "d.jsonl", "-o", tmp_path / name).returncode == 0

    def forget(name):
        path = tmp_path / name / "summary.json"
        summary = json.loads(path.read_text(encoding="utf-8"))
        del summary["judge"], summary["config"]
        path.write_text(json.dumps(summary), encoding="utf-8")

    forget("b")
    proc = run_cli("compare", tmp_path / "a", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"factjudge: warning: {tmp_path / 'b'} record(s) no {what} in summary.json: whether the two runs "
        f"used the same {what} cannot be checked; the comparison may not be fair"
        for what in ("judge config", "judge")]
    forget("a")
    proc = run_cli("compare", tmp_path / "a", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"factjudge: warning: {tmp_path / 'a'} and {tmp_path / 'b'} record(s) no {what} in summary.json: "
        f"whether the two runs used the same {what} cannot be checked; the comparison may not be fair"
        for what in ("judge config", "judge")]
