"""Names printed on a terminal (issue 32, Low): a fact type, a field or a doc_id may hold control
characters; every line factjudge prints on stderr shows them escaped (``\\x1b``), so an ESC in a
fact type cannot move the cursor or recolour the screen, a CR cannot overwrite the line and a
newline cannot split it. The files written keep the names as they were."""
import json
import warnings

from evalkit import run_cli, write_jsonl

from factjudge import run_judge
from factjudge.errors import FactJudgeWarning
from factjudge.util.terminal import printable

#: ESC (a CSI sequence), CR, a newline, a C1 CSI, DEL, a bidi override: each acts on a terminal.
HOSTILE = "rev\x1b[2J\r\n\x9b\x7f\u202e"
SHOWN = "rev\\x1b[2J\\x0d\\x0a\\x9b\\x7f\\u202e"


def no_control_characters(text):
    return not any(ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) <= 0x9f or c == "\u202e" for c in text)


def test_printable_escapes_what_acts_on_a_terminal_and_keeps_the_rest():
    assert printable(HOSTILE) == SHOWN
    assert printable("Umsatz (€) — 東京, C:\\path") == "Umsatz (€) — 東京, C:\\path"


def test_a_warning_naming_a_hostile_fact_type_and_field_is_printed_escaped(tmp_path):
    """A warning of eval names the fact type and the field as they are; stderr shows them
    escaped, one line; summary.json keeps the raw names."""
    doc = {"doc_id": f"d{HOSTILE}",
           "gold_facts": [{"id": "g1", "fact_type": HOSTILE, "value": "1"}],
           "predicted_facts": [{"id": "p1", "fact_type": HOSTILE, "value": "1", f"x{HOSTILE}": 1}]}
    data = write_jsonl(tmp_path / "d.jsonl", [doc])
    proc = run_cli("eval", data, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert no_control_characters(proc.stderr)
    warning = next(line for line in proc.stderr.splitlines() if "predicted facts carry" in line)
    assert warning.startswith(f"factjudge: warning: {SHOWN}: predicted facts carry x{SHOWN}, ")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert any(w.startswith(f"{HOSTILE}: predicted facts carry x{HOSTILE}") for w in summary["warnings"])


def test_an_error_naming_a_hostile_fact_type_is_printed_escaped(tmp_path):
    doc = {"doc_id": "d", "gold_facts": [{"id": "g1", "fact_type": HOSTILE, "value": "1"}],
           "predicted_facts": []}
    data = write_jsonl(tmp_path / "d.jsonl", [doc])
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"entity_types": ["revenue"]}), encoding="utf-8")
    proc = run_cli("eval", data, "-c", cfg, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"factjudge: error: {data}: no fact is in scope: entity_types ['revenue'] matches none of the "
        f"fact types present ({SHOWN})"]


def test_the_library_warns_with_the_names_escaped_and_keeps_them_in_the_result():
    gold = [{"id": "g1", "fact_type": HOSTILE, "value": "1"}]
    pred = [{"id": "p1", "fact_type": HOSTILE, "value": "1", "page": 3}]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FactJudgeWarning)
        result = run_judge(gold, pred)
    shown = [str(w.message) for w in caught if w.category is FactJudgeWarning]
    assert shown and all(no_control_characters(m) and "\n" not in m for m in shown)
    assert any(m.startswith(f"{SHOWN}: predicted facts carry page") for m in shown)
    assert any(w.startswith(f"{HOSTILE}: predicted facts carry page") for w in result.warnings)
