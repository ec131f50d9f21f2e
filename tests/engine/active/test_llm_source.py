"""The LLM counterfactual source against a real loopback OpenAI-compatible server: made once, stored, reused."""

from __future__ import annotations

import csv

from engine.active.counterfactuals import LLMCounterfactuals, VariationCounterfactuals
from engine.active.simulation import simulate
from engine.cli import main
from engine.io import ImportOptions, import_file
from engine.llm.config import LLMConfig
from engine.store import Project
from engine.patterns.scores import ScoredPattern
from engine.patterns.store import store_patterns
from tests.engine.counterbias.scripted_llm import edit_sentence
from tests.engine.counterbias.test_variation import REVIEWS
from tests.engine.counterbias.test_variation import reply as vt_reply

POS = ["I love the movie.", "The best film this year.", "My favorite actor was great.", "I love this story.",
       "The best ending I have seen.", "A favorite of mine, I love it."]
NEG = ["I hate the movie.", "The worst film this year.", "The actor was bad and I hate it.", "I hate this story.",
       "The worst ending I have seen.", "A bad film, I hate it."]


def test_llm_source_generates_only_what_is_missing(tmp_path, stub, capsys):
    def reply(body):
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        return f'Text: "{edit_sentence(user.split(chr(10) + "Text: ", 1)[1])}"'

    server = stub(reply=reply)
    csv = tmp_path / "d.csv"
    csv.write_text("text,label\n" + "".join(f'"{t}",pos\n' for t in POS) + "".join(f'"{t}",neg\n' for t in NEG),
                   encoding="utf-8")
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    with Project.create(tmp_path / "llm.cbproj") as p:
        dataset = import_file(p, csv, options=ImportOptions(name="d")).dataset
        rows = list(p.iter_examples(dataset.id))
        source = LLMCounterfactuals(p, dataset.id, config)
        try:
            first = source([rows[0]["id"], rows[6]["id"]])
            assert first == {rows[0]["id"]: [("I hate the movie.", "neg")],
                             rows[6]["id"]: [("I love the movie.", "pos")]}
            sent = server.count
            assert sent == 2 and source([rows[0]["id"]]) == {rows[0]["id"]: first[rows[0]["id"]]}
            assert server.count == sent  # stored: nothing is sent again
            result = simulate(p, dataset.id, strategies=["random", "counterfactual"], shots=[4], seeds=1,
                              learner="tfidf-lr", counterfactuals=source, test_fraction=0.34)
        finally:
            source.close()
        cells = {c.strategy: c for c in result.cells}
        assert cells["counterfactual"].added == 4 and cells["counterfactual"].train_rows == 8
        assert cells["counterfactual"].selected == cells["random"].selected
        made = p.db.query("SELECT COUNT(*) AS n FROM candidates WHERE method = 'llm' AND status = 'proposed'")
        assert next(iter(made))["n"] == len({*cells["random"].selected, rows[0]["id"], rows[6]["id"]})
    # the CLI: the simulation's progress line says when a cell waits for the LLM
    capsys.readouterr()
    slow = stub(reply=reply, latency=0.6)  # past the progress line's half-second throttle
    assert main(["al-simulate", str(tmp_path / "llm.cbproj"), "d", "--strategies", "counterfactual", "--shots", "5",
                 "--seeds", "2", "--learner", "tfidf-lr", "--test-fraction", "0.34", "--counterfactuals", "llm",
                 "--backend", "openai", "--base-url", slow.base_url, "--model", "stub"]) == 0
    err = capsys.readouterr().err
    assert slow.count > 0
    assert "making counterfactuals of the selected examples: llm:" in err and "Traceback" not in err


def test_pattern_keeping_source_makes_the_selected_examples_counterfactuals_once(tmp_path, stub):
    def reply(body):
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if "Pattern: " not in user and "soup tasted" in user:  # the plain edit of the review no pattern matches
            return 'Text: "The waiter tasted of nothing at all."'
        return vt_reply(body)

    server = stub(reply=reply)
    src = tmp_path / "r.csv"
    with src.open("w", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *REVIEWS])
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    with Project.create(tmp_path / "vt.cbproj") as p:
        ds = import_file(p, src, options=ImportOptions(name="r")).dataset
        store_patterns(p, ds.id, [ScoredPattern("[waiter]+AUX+ADJ", "service", 1.0, 1.0, 1.0, 4, 4),
                                  ScoredPattern("[soup]+AUX+ADJ", "food", 1.0, 1.0, 1.0, 1, 1)])
        ids = {r["text"]: int(r["id"]) for r in p.iter_examples(ds.id)}
        rude, grumpy, soup = ids[REVIEWS[0][0]], ids[REVIEWS[2][0]], ids[REVIEWS[4][0]]
        strict = VariationCounterfactuals(p, ds.id, config, fallback=False)
        try:
            # the kept edit only: "CANNOT" is a stored failure; no pattern of its label matches the soup review
            assert strict([rude, grumpy, soup]) == {rude: [("Our waiter was pricey and the night dragged on.", "food")]}
        finally:
            strict.close()
        source = VariationCounterfactuals(p, ds.id, config)  # the default: a plain edit where no pattern matches
        try:
            got = source([rude, grumpy, soup])
            assert got == {rude: [("Our waiter was pricey and the night dragged on.", "food")],
                           soup: [("The waiter tasted of nothing at all.", "service")]}
            sent = server.count
            assert source([rude, grumpy, soup]) == got and server.count == sent  # stored: nothing sent again
            assert source.key.startswith("vt:openai:stub:stored:") and "plain=" in source.key
        finally:
            source.close()
        rows = p.db.query("SELECT example_id, method, status FROM candidates ORDER BY id")
        assert {(r["example_id"], r["method"], r["status"]) for r in rows} == {
            (rude, "vt", "proposed"), (grumpy, "vt", "failed"), (soup, "llm", "proposed")}
