"""The corpus, index and retrieve verbs: results on stdout, exit 3 with a CB95x code on user errors."""

from __future__ import annotations

import json

from engine.cli import main
from tests.engine.retrieval.conftest import need_faiss


def test_corpus_index_retrieve(labelled_project, tmp_path, capsys):
    need_faiss()
    path = str(labelled_project.path)
    labelled_project.close()
    src = tmp_path / "extra.txt"
    src.write_text("An unexpectedly charming little film. Loved every minute.\nA tedious, joyless slog.\n",
                   encoding="utf-8")
    assert main(["-q", "corpus", path, "imdb", str(src), "--label-with", "judge", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["imports"][0]["sentences_added"] == 3 and out["labels"]["labelled_now"] == 3
    assert main(["-q", "index", path, "imdb", "--kind", "flat", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["built"] and first["rows"] == out["sentences"]
    assert main(["-q", "index", path, "imdb", "--kind", "flat"]) == 0
    assert "reopened" in capsys.readouterr().out
    assert main(["-q", "retrieve", path, "imdb", "--model", "judge", "--kind", "flat", "--text", "A tedious film.",
                 "--label", "Negative", "-k", "4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)[0]
    assert len(result["hits"]) == 4 and all(h["label"] == "Positive" for h in result["hits"])
    assert result["keywords"]
    assert main(["-q", "retrieve", path, "imdb", "--model", "judge", "--kind", "flat", "--text", "A tedious film.",
                 "--label", "Negative", "-k", "4", "--diversity", "0.6", "--json"]) == 0
    varied = json.loads(capsys.readouterr().out)[0]
    assert len(varied["hits"]) == 4 and varied["hits"][0] == result["hits"][0]
    assert main(["-q", "retrieve", path, "imdb", "--model", "judge", "--kind", "flat", "--dataset", "cad",
                 "--limit", "2", "--per-sentence"]) == 0
    assert "keywords:" in capsys.readouterr().out


def test_user_errors_exit_3_with_codes(labelled_project, capsys):
    path = str(labelled_project.path)
    labelled_project.close()
    cases = [
        (["corpus", path, "imdb"], "CB954"),                                          # nothing to do
        (["index", path, "nope"], "CB952"),                                           # no such corpus
        (["index", path, "imdb", "--kind", "annoy"], "CB959"),                        # no such index kind
        (["index", path, "imdb", "--encoder", "word2vec"], "CB958"),                  # no such encoder
        (["index", path, "imdb", "--kind", "flat", "--nprobe", "4"], "CB960"),        # setting of another kind
        (["retrieve", path, "imdb", "--model", "judge", "--text", "x"], "CB950"),     # --text without --label
        (["retrieve", path, "imdb", "--model", "judge", "--kind", "hnsw", "--text", "x", "--label", "Positive"],
         "CB961"),                                                                     # index not built
        (["retrieve", path, "imdb", "--model", "judge", "--kind", "flat", "--text", "x", "--label", "meh"],
         "CB957"),                                                                     # foreign label
        (["retrieve", path, "imdb", "--model", "judge", "--text", "x", "--label", "Positive", "--diversity", "2"],
         "CB950"),                                                                     # diversity outside [0, 1]
    ]
    for argv, code in cases:
        assert main(["-q", *argv]) == 3, argv
        err = capsys.readouterr().err
        assert f"[{code}]" in err and "What to do:" in err and "Traceback" not in err, (argv, err)
