"""The LLM counterfactual source against a real loopback OpenAI-compatible server: made once, stored, reused."""

from __future__ import annotations

from engine.active.counterfactuals import LLMCounterfactuals
from engine.active.simulation import simulate
from engine.io import ImportOptions, import_file
from engine.llm.config import LLMConfig
from engine.store import Project
from tests.engine.counterbias.scripted_llm import edit_sentence

POS = ["I love the movie.", "The best film this year.", "My favorite actor was great.", "I love this story.",
       "The best ending I have seen.", "A favorite of mine, I love it."]
NEG = ["I hate the movie.", "The worst film this year.", "The actor was bad and I hate it.", "I hate this story.",
       "The worst ending I have seen.", "A bad film, I hate it."]


def test_llm_source_generates_only_what_is_missing(tmp_path, stub):
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
