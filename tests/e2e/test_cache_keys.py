"""Response-cache keys are what users' cached answers are found by: they stay byte-identical
across refactors. The keys below were computed on the code before issue #33's judge contract
(commit b07b3b8) and are pinned here; each is a question's batch ``custom_id``, which is its
response-cache key. No server is called: ``--batch-export`` only writes the questions."""
import hashlib
import json

import pytest
from evalkit import fact, run_cli, write_jsonl

DOCS = [
    {"doc_id": "A",
     "gold_facts": [fact("g1", value="1", unit="EUR"), fact("g2", value="2"), fact("g3", "ceo", name="X Y"),
                    fact("g4", "cfo", name="Q")],
     "predicted_facts": [fact("p1", value="1.0", unit="EUR"), fact("p2", "ceo", name="X"),
                         fact("p3", "ceo", name="Y | Z"), fact("p4", value=None)]},
    {"doc_id": "B",
     "gold_facts": [fact("g1", value="5"), fact("g2", "ceo", name="Z")],
     "predicted_facts": [fact("p1", value="five")]},
]
CONFIG = {"entity_types": ["revenue", "ceo", "cfo"]}

CASES = {
    "default": ([], {}),
    "json_object": (["--structured-output", "json_object"], {}),
    "none_mode": (["--structured-output", "none"], {}),
    "unpinned": (["--pin-id", "never"], {}),  # 127.0.0.1 is self-hosted: the default pins
    "unpinned_same_type": (["--pin-id", "never", "--structured-output", "json_object"], {"candidates": "same_type"}),
    "same_type": ([], {"candidates": "same_type"}),
    "brief": (["--reasoning", "brief"], {}),
    "sampling": (["--max-tokens", "100", "--temperature", "0.5", "--reasoning-effort", "low"], {}),
    "no_key": (["--no-prompt-cache-key"], {}),
    "shortlist": ([], {"shortlist_top_k": 1}),
    "rules_fields": ([], {"fields": ["value", "name"], "matching_rules": ["EUR equals euro"]}),
    # the guard off: the questions as before #36, their keys unchanged (with #37's numbers family
    # off: on, the rules prove B's 5 = five, and that pair is not asked at all: hybrid_numbers)
    "hybrid": (["--judge", "hybrid"], {"proof_guard": False, "rules_knowledge": {"numbers": False}}),
    # the guard on (the default): d-g1 (8 vs 9) and a-g2 (2 vs 1) are not asked, and the candidates
    # proved different are left out of the questions that are
    "hybrid_guard": (["--judge", "hybrid"], {"rules_knowledge": {"numbers": False}}),
    # the defaults: hybrid_guard's questions but B's g1 and p1 (5 of its 7 keys, unchanged)
    "hybrid_numbers": (["--judge", "hybrid"], {}),
}

#: sha256 of the sorted batch lines of each case (the request bodies as sent live).
PINNED_BODIES = {
    'brief': '306897383452a6e501a1bd5cbff8be7004a31a7f090912abe1d3a9df3daf336e',
    'default': '641a0c530395a6347d01d7e2a6cd90a6902577772c0cf4f944559eceffa8a420',
    'hybrid': 'f30269cbf6e08409b6ca65c5af5c04bc40b99565f7adbefae7af94c12a6418c0',
    'hybrid_guard': '3fecf960b27d8144239c3ebd6cb4d977e019c433143304c0a9cbf640b74751c6',
    'hybrid_numbers': '869048d5004f8fc46780a9f85a3e3f36747d8f568809c539393027efb27d2bf0',
    'json_object': '8607503fc0366b88a89bda346706129d89f8d41a336587807e6646109d5e37fd',
    'no_key': '225253c4eb1ff5e62d3e43c230b6246234fc7bcc59b1f2a7ea5a603ce9a2bea7',
    'none_mode': '44913a933ab6dc00611cbe9a3be0be5770fd48c87b36f8120e0d677797222db2',
    'rules_fields': 'b9824098cb6d5edda3ee37dc7e9f7cec267df3b48ef8e7b1a1ecfc014605382e',
    'same_type': 'fee4abe08dc23af951fc3cd434161d437f2b4931cfd263c7d8655a77b8c38335',
    'sampling': '839209e7d15ce371afc1ebc1d94f068b2c0321fcfde1cfa08b8de5d50667fbf8',
    'shortlist': 'ecff8a021e3e76f2d0e602f488221e2b61dcdc0d64948686a80d3e34f0caea56',
    'unpinned': 'cf4616e55dae6432ffa2145456bfd9357b42eb3364d01ae55bb1b24cd9649a01',
    'unpinned_same_type': '12861d80ca253e0f944bec34eacd8ad5222324c5b4b3c5d801799fa8dcecd85f',
}
#: sha256 of the sorted custom_ids of each case, as the code before #33 wrote them.
PINNED = {
    'brief': (9, '2d960a58e185f115d8cba14e3e0451f5c8b355134b5f2cbddb19c8fd5307d5d6'),
    'default': (9, 'da771be46f0a225ca4180f12a31208057a35ff8b72cc31cadf877fbcce255a48'),
    'hybrid': (7, 'f8a29e92a0e0905d9a154f3531722cae11d45bf6bc1bdb60d5c645476a423858'),
    'hybrid_guard': (7, '5766137292a6837456abce32db30d7f252a26cd217dc5dee373449e476fe7eaa'),
    'hybrid_numbers': (5, 'ceef7a5105d1bcf399bd3dce22407ad77529a14208478b90f48d8eb1f302756d'),
    'json_object': (9, '91f85cabe00109e0666f202ca9407a5a791c783d68b4ca8c6b12d76609dc1b8b'),
    'no_key': (9, 'da771be46f0a225ca4180f12a31208057a35ff8b72cc31cadf877fbcce255a48'),
    'none_mode': (9, '4441ac53acaa82fdcbe596a546c142e2c4f86e6e3d315a422fb0627742804a48'),
    'rules_fields': (9, '28e00ead679ae1ab7e3b6932cfbb4eb2b4d5237c7ccc949dd5c589766a78fad5'),
    'same_type': (9, '8ffbd55b9d02c483f52ae9c37f99ae18cf094927036737988551063ee895c22d'),
    'sampling': (9, '49d718888240ba546b8f12124e3b59c3592b1dd9601058da37903dcba8934650'),
    'shortlist': (9, 'ab1e430f6584f9bb206684898eda16dd1d920f884fe7f63ed79169ac496c7072'),
    'unpinned': (9, '241262bf5af02a2f445fe490e732be1388174dd47f42feaacb83a19de49b4fb1'),
    'unpinned_same_type': (9, '6b961a02bfa4f614daae8b855373ef98b14fbdfb0a25337d99fc1fa3f47f88cd'),
}


def keys(tmp_path, args, config):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({**CONFIG, **config}), encoding="utf-8")
    data = write_jsonl(tmp_path / "data.jsonl", DOCS)
    out = tmp_path / "batch.jsonl"
    proc = run_cli("eval", data, "-c", cfg, "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                   *args, "--batch-export", out, "-o", tmp_path / "out", cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    lines = sorted(out.read_text(encoding="utf-8").splitlines())
    assert lines
    return sorted(json.loads(line)["custom_id"] for line in lines), lines


@pytest.mark.parametrize("case", sorted(CASES))
def test_cache_keys_unchanged(tmp_path, case):
    ids, lines = keys(tmp_path, *CASES[case])
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    assert (len(ids), digest) == PINNED[case]
    # the requests themselves too (prompt_cache_key included): a provider's prompt cache is kept
    assert hashlib.sha256("\n".join(lines).encode()).hexdigest() == PINNED_BODIES[case]
