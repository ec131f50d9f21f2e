"""Project database schema as an ordered list of migrations.

A project file records the version it is at in ``schema_version``; opening it runs every
migration above that version, in order, each in one transaction. Migrations are only ever
appended: never edit one that has shipped.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import datetime, timezone

MIGRATIONS: list[str] = [
    # 1: the spine (datasets, examples, membership) and the provenance records later steps fill.
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    CREATE TABLE datasets (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('original', 'filtered', 'augmented')),
        parent_id INTEGER REFERENCES datasets(id),
        task TEXT NOT NULL CHECK (task IN ('single', 'pair')),
        labels TEXT NOT NULL,              -- JSON list, the dataset's label set
        source TEXT,                       -- file it was imported from, or the run that built it
        params TEXT NOT NULL DEFAULT '{}', -- JSON: import mapping, filter settings, counts
        row_count INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    );

    CREATE TABLE examples (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),  -- dataset that created the row
        ext_id TEXT,                     -- id column of the imported file, if any
        text TEXT,                       -- single-text tasks
        premise TEXT,                    -- pair tasks
        hypothesis TEXT,
        label TEXT NOT NULL,
        split TEXT,
        source TEXT NOT NULL DEFAULT 'original' CHECK (source IN ('original', 'augmented')),
        method TEXT,                     -- how an augmented row was made (e.g. 'coba')
        parent_id INTEGER REFERENCES examples(id),
        target_label TEXT,
        created_at TEXT NOT NULL,
        meta TEXT                        -- JSON: judge scores, backend/model, ...
    );
    CREATE INDEX examples_label ON examples(dataset_id, label);

    -- Which examples a dataset version holds, in order. Derived versions (filtered,
    -- augmented) share example rows with their parent instead of copying text.
    CREATE TABLE dataset_members (
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),
        position INTEGER NOT NULL,
        example_id INTEGER NOT NULL REFERENCES examples(id),
        PRIMARY KEY (dataset_id, position)
    ) WITHOUT ROWID;
    CREATE INDEX members_example ON dataset_members(example_id);

    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,               -- 'import', 'stats', 'train', 'attribute', 'generate', ...
        dataset_id INTEGER REFERENCES datasets(id),
        params TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'running'
            CHECK (status IN ('running', 'done', 'failed', 'cancelled')),
        message TEXT,
        result TEXT,                      -- JSON summary
        started_at TEXT NOT NULL,
        finished_at TEXT
    );

    CREATE TABLE models (
        id INTEGER PRIMARY KEY,
        run_id INTEGER REFERENCES runs(id),
        name TEXT NOT NULL UNIQUE,
        backbone TEXT NOT NULL,           -- registry name
        path TEXT,                        -- relative to the project's files folder
        params TEXT NOT NULL DEFAULT '{}',
        metrics TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
    );

    CREATE TABLE attributions (
        id INTEGER PRIMARY KEY,
        model_id INTEGER NOT NULL REFERENCES models(id),
        method TEXT NOT NULL,
        settings_key TEXT NOT NULL,
        example_id INTEGER NOT NULL REFERENCES examples(id),
        field TEXT NOT NULL DEFAULT 'text',
        words TEXT NOT NULL,              -- JSON list of canonical words
        scores TEXT NOT NULL,             -- JSON list of floats, one per word
        target TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (model_id, method, settings_key, example_id, field)
    );

    CREATE TABLE triples (
        id INTEGER PRIMARY KEY,
        run_id INTEGER REFERENCES runs(id),
        example_id INTEGER NOT NULL REFERENCES examples(id),
        field TEXT NOT NULL DEFAULT 'text',
        sentence_index INTEGER NOT NULL,
        ord INTEGER NOT NULL,
        subject TEXT NOT NULL,
        predicate TEXT NOT NULL,
        object TEXT NOT NULL,
        category TEXT,                    -- principal / spurious / normal
        edited INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    );
    CREATE INDEX triples_example ON triples(example_id, field, sentence_index, ord);

    CREATE TABLE candidates (
        id INTEGER PRIMARY KEY,
        run_id INTEGER REFERENCES runs(id),
        example_id INTEGER NOT NULL REFERENCES examples(id),
        method TEXT NOT NULL,
        target_label TEXT NOT NULL,
        text TEXT,
        premise TEXT,
        hypothesis TEXT,
        scores TEXT NOT NULL DEFAULT '{}',
        meta TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'proposed',
        created_at TEXT NOT NULL
    );
    CREATE INDEX candidates_example ON candidates(example_id);

    CREATE TABLE decisions (
        id INTEGER PRIMARY KEY,
        candidate_id INTEGER NOT NULL REFERENCES candidates(id),
        decision TEXT NOT NULL CHECK (decision IN ('accept', 'reject', 'edit', 'undo')),
        edited_text TEXT,
        decided_at TEXT NOT NULL
    );

    CREATE TABLE llm_cache (
        key TEXT PRIMARY KEY,             -- sha256 of (backend, model, messages, params)
        backend TEXT NOT NULL,
        model TEXT NOT NULL,
        request TEXT NOT NULL,
        response TEXT NOT NULL,
        usage TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
    );
    """,
    # 2: the ensemble vote on principal / spurious words (engine.attribution.vote_store).
    """
    CREATE TABLE vote_sets (
        id INTEGER PRIMARY KEY,
        vote_key TEXT NOT NULL UNIQUE,    -- hash of members, methods + settings keys, vote settings, user words
        dataset_id INTEGER REFERENCES datasets(id),
        run_id INTEGER REFERENCES runs(id),
        params TEXT NOT NULL DEFAULT '{}', -- JSON: model_ids, model names, methods, settings keys, vote settings, word lists
        created_at TEXT NOT NULL
    );

    CREATE TABLE word_votes (
        vote_set_id INTEGER NOT NULL REFERENCES vote_sets(id) ON DELETE CASCADE,
        example_id INTEGER NOT NULL REFERENCES examples(id),
        field TEXT NOT NULL DEFAULT 'text',
        principal TEXT NOT NULL,          -- JSON list of normalised words (W_p)
        spurious TEXT NOT NULL,           -- JSON list (W_s), user-list words included
        votes TEXT NOT NULL,              -- JSON {word: members voting for it}
        member_words TEXT NOT NULL,       -- JSON {model name: [its voted words]}
        user_words TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        PRIMARY KEY (vote_set_id, example_id, field)
    ) WITHOUT ROWID;
    CREATE INDEX word_votes_example ON word_votes(example_id);
    """,
    # 3: imports commit in short transactions (engine.store.staging). A dataset being imported
    # is hidden from every listing until it is ready; each unfinished import is recorded so that
    # a failed, cancelled or killed one can be removed, rows appended to an existing dataset included.
    """
    ALTER TABLE datasets ADD COLUMN state TEXT NOT NULL DEFAULT 'ready' CHECK (state IN ('importing', 'ready'));

    CREATE TABLE imports (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),  -- a new dataset, or the one appended to
        first_position INTEGER NOT NULL,  -- the dataset's members from here on are this import's
        started_at TEXT NOT NULL
    );
    CREATE INDEX imports_dataset ON imports(dataset_id);

    -- Deleting example rows (a failed import, a deleted dataset) checks every foreign key that
    -- points at them; without these two indexes each check scanned a whole table.
    CREATE INDEX examples_parent ON examples(parent_id) WHERE parent_id IS NOT NULL;
    CREATE INDEX attributions_example ON attributions(example_id);
    """,
    # 4 (issue 15, runs): a run records its process (pid, its start time, host) and a heartbeat,
    # so that an open can tell a run whose process is gone and mark it 'interrupted'
    # (engine.store.runs.mark_interrupted). The status CHECK gains 'interrupted' by editing the
    # stored CREATE TABLE text (SQLite's documented way to loosen a CHECK without rebuilding the
    # table; every stored row satisfies the wider check). The ADD COLUMNs come first: they change
    # the schema cookie, so every connection re-reads the edited schema.
    """
    ALTER TABLE runs ADD COLUMN pid INTEGER;
    ALTER TABLE runs ADD COLUMN pid_started TEXT;
    ALTER TABLE runs ADD COLUMN host TEXT;
    ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
    CREATE INDEX runs_status ON runs(status);
    PRAGMA writable_schema = ON;
    UPDATE sqlite_master SET sql = replace(sql, '''cancelled'')', '''cancelled'', ''interrupted'')')
        WHERE type = 'table' AND name = 'runs';
    PRAGMA writable_schema = OFF;
    """,
    # 5 (issue 12, downstream evaluation): datasets/splits marked as test sets with a role, and one
    # result row per finished (condition, classifier, seed, test set) so a rerun skips it.
    """
    CREATE TABLE test_sets (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),
        split TEXT NOT NULL DEFAULT '',   -- '' = every row of the dataset
        role TEXT NOT NULL CHECK (role IN ('in-domain', 'counterfactual', 'out-of-domain')),
        created_at TEXT NOT NULL,
        UNIQUE (dataset_id, split)
    );

    CREATE TABLE eval_results (
        id INTEGER PRIMARY KEY,
        run_id INTEGER REFERENCES runs(id),
        condition TEXT NOT NULL,          -- the condition's name
        condition_key TEXT NOT NULL,      -- hash of its sources (dataset ids, splits, limits, row counts)
        condition_spec TEXT NOT NULL,     -- JSON of its sources
        classifier TEXT NOT NULL,         -- e.g. 'tfidf-lr', 'backbone:minilm-l6'
        classifier_key TEXT NOT NULL,     -- hash of name + parameters
        classifier_params TEXT NOT NULL DEFAULT '{}',
        seed INTEGER NOT NULL,
        test_set TEXT NOT NULL,           -- the test set's name when evaluated
        test_key TEXT NOT NULL,           -- hash of its dataset, split and rows
        role TEXT NOT NULL,
        accuracy REAL NOT NULL,
        macro_f1 REAL NOT NULL,
        n INTEGER NOT NULL,
        train_rows INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (condition_key, classifier_key, seed, test_key)
    );
    """,
    # 6 (issue 13, CORE retrieval): an unlabeled corpus of deduplicated sentences (engine.retrieval.corpus),
    # the files it was read from (how far each got, so an import resumes), each sentence's label under a
    # trained member (probabilities kept), and the counterfactual excerpts retrieved for an example.
    """
    CREATE TABLE corpora (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        sentence_count INTEGER NOT NULL DEFAULT 0,  -- also the next position
        version INTEGER NOT NULL DEFAULT 0,         -- bumped by every import batch that adds sentences
        params TEXT NOT NULL DEFAULT '{}',          -- JSON: splitter, normalisation
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );

    CREATE TABLE corpus_sources (
        id INTEGER PRIMARY KEY,
        corpus_id INTEGER NOT NULL REFERENCES corpora(id) ON DELETE CASCADE,
        source_key TEXT NOT NULL,                   -- hash of path, size, mtime and column
        path TEXT NOT NULL,
        text_column TEXT,
        docs_done INTEGER NOT NULL DEFAULT 0,       -- records read and stored so far
        sentences_added INTEGER NOT NULL DEFAULT 0,
        duplicates INTEGER NOT NULL DEFAULT 0,
        finished INTEGER NOT NULL DEFAULT 0,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        UNIQUE (corpus_id, source_key)
    );

    -- position: 0-based, dense, in insertion order: the row of the sentence in the embedding matrix.
    CREATE TABLE corpus_sentences (
        corpus_id INTEGER NOT NULL REFERENCES corpora(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        hash TEXT NOT NULL,                         -- of the normalised text (dedup key)
        text TEXT NOT NULL,
        source_id INTEGER REFERENCES corpus_sources(id),
        doc INTEGER,                                -- record number in the source (1-based)
        PRIMARY KEY (corpus_id, position)
    ) WITHOUT ROWID;
    CREATE UNIQUE INDEX corpus_sentences_hash ON corpus_sentences(corpus_id, hash);

    CREATE TABLE corpus_labels (
        corpus_id INTEGER NOT NULL REFERENCES corpora(id) ON DELETE CASCADE,
        model_id INTEGER NOT NULL REFERENCES models(id),
        position INTEGER NOT NULL,
        label INTEGER NOT NULL,                     -- index into the member's labels
        probs BLOB NOT NULL,                        -- float32 probabilities, one per label
        PRIMARY KEY (corpus_id, model_id, position)
    ) WITHOUT ROWID;

    CREATE TABLE retrievals (
        id INTEGER PRIMARY KEY,
        run_id INTEGER REFERENCES runs(id),
        corpus_id INTEGER NOT NULL REFERENCES corpora(id) ON DELETE CASCADE,
        settings_key TEXT NOT NULL,                 -- hash of index, encoder, labeller, k
        example_id INTEGER NOT NULL REFERENCES examples(id),
        sentence_index INTEGER NOT NULL,            -- -1: the whole text
        query TEXT NOT NULL,
        query_label TEXT NOT NULL,
        hits TEXT NOT NULL,                         -- JSON [{position, text, score, label, prob}]
        keywords TEXT NOT NULL,                     -- JSON list of content words
        created_at TEXT NOT NULL,
        UNIQUE (corpus_id, settings_key, example_id, sentence_index)
    );
    CREATE INDEX retrievals_example ON retrievals(example_id);
    """,
    # 7 (issue 14, active-learning simulation): one row per finished (setup, strategy, seed, shots) cell
    # of engine.active.simulation, so a rerun skips it.
    """
    CREATE TABLE al_results (
        id INTEGER PRIMARY KEY,
        run_id INTEGER REFERENCES runs(id),
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),
        setup_key TEXT NOT NULL,          -- hash of the dataset's rows, the pool/test split and the learner
        strategy TEXT NOT NULL,           -- registry name, e.g. 'random', 'cluster', 'counterfactual'
        strategy_key TEXT NOT NULL,       -- hash of the name and parameters (counterfactual source included)
        learner TEXT NOT NULL,            -- e.g. 'embed-lr'
        seed INTEGER NOT NULL,
        shots INTEGER NOT NULL,           -- annotated examples
        train_rows INTEGER NOT NULL,      -- shots + counterfactual rows added
        added INTEGER NOT NULL DEFAULT 0, -- counterfactual rows added
        macro_f1 REAL NOT NULL,
        accuracy REAL NOT NULL,
        n_test INTEGER NOT NULL,
        selected TEXT NOT NULL DEFAULT '[]', -- JSON: example ids annotated, in order
        params TEXT NOT NULL DEFAULT '{}',   -- JSON: strategy and learner parameters
        created_at TEXT NOT NULL,
        UNIQUE (setup_key, strategy_key, seed, shots)
    );
    CREATE INDEX al_results_setup ON al_results(setup_key, strategy_key);
    """,
    # 8 (issue 14, symbolic patterns): a dataset's patterns per label, synthesized or written by the
    # analyst (engine.patterns.store), with how well they picked out the label when stored.
    """
    CREATE TABLE patterns (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),
        label TEXT NOT NULL,
        pattern TEXT NOT NULL,            -- in the pattern language (engine.patterns.syntax)
        source TEXT NOT NULL,             -- 'synthesized' or 'analyst'
        precision REAL,
        recall REAL,
        f1 REAL,
        matched INTEGER,
        matched_label INTEGER,
        params TEXT NOT NULL DEFAULT '{}', -- JSON: split, soft matcher, search settings
        created_at TEXT NOT NULL,
        UNIQUE (dataset_id, label, pattern)
    );
    """,
    # 9 (issue 14, the annotation loop): the analyst's labels of examples and of counterfactual
    # candidates (engine.active.annotation), and the learner's held-out score after each retraining.
    """
    CREATE TABLE annotations (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),
        example_id INTEGER NOT NULL REFERENCES examples(id),
        candidate_id INTEGER REFERENCES candidates(id), -- NULL: the example itself
        label TEXT NOT NULL,                             -- the analyst's label
        strategy TEXT,                                   -- how the example was chosen
        created_at TEXT NOT NULL
    );
    CREATE UNIQUE INDEX annotations_item ON annotations(dataset_id, example_id, IFNULL(candidate_id, 0));
    CREATE TABLE annotation_scores (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),
        setup_key TEXT NOT NULL,          -- the held-out split and learner
        annotations INTEGER NOT NULL,     -- examples labelled
        counterfactuals INTEGER NOT NULL, -- labelled counterfactuals trained on
        macro_f1 REAL NOT NULL,
        accuracy REAL NOT NULL,
        test_size INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX annotation_scores_dataset ON annotation_scores(dataset_id, setup_key);
    """,
    # 10: the sentence splitter's version each triple was numbered with (engine.text.sentences.SPLITTER_VERSION):
    # version 2 cuts glued sentences ("won.It") apart, so a version-1 index is read through regroup().
    """
    ALTER TABLE triples ADD COLUMN splitter INTEGER NOT NULL DEFAULT 1;
    """,
    # 11 (issue 51, demonstrations): human counterfactual pairs imported for a dataset (engine.generation.demo_pairs),
    # and the sentence vectors of the demonstration pool, cached by encoder and sentence (engine.generation.demos).
    """
    CREATE TABLE demo_pairs (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES datasets(id),
        pair_key TEXT NOT NULL,           -- hash of (original, revised)
        original TEXT NOT NULL,
        label TEXT NOT NULL,
        revised TEXT NOT NULL,
        target TEXT NOT NULL,
        source TEXT NOT NULL,             -- the file's name
        created_at TEXT NOT NULL,
        UNIQUE (dataset_id, pair_key)
    );
    CREATE INDEX demo_pairs_original ON demo_pairs(original);
    CREATE TABLE demo_vectors (
        key TEXT PRIMARY KEY,             -- hash of (encoder key, sentence)
        vector BLOB NOT NULL              -- float32, unit length
    ) WITHOUT ROWID;
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


def now() -> str:
    """UTC timestamp in ISO 8601 with seconds, as stored in every ``*_at`` column."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def tables_at(version: int) -> set[str]:
    """Names of the tables a project at schema ``version`` holds (``schema_version`` included)."""
    names = {"schema_version"} if version else set()
    for script in MIGRATIONS[:version]:
        names.update(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", script))
    return names


def current_version(conn: sqlite3.Connection) -> int:
    """Schema version recorded in ``conn`` (0 for an empty database)."""
    has = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'"
    ).fetchone()
    if not has:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply every pending migration, each in its own transaction.

    ``conn`` must be in autocommit mode (``isolation_level=None``).

    Returns
    -------
    list of int
        The versions applied.
    """
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    applied = []
    for version in range(current_version(conn) + 1, SCHEMA_VERSION + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _split_sql(MIGRATIONS[version - 1]):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?, ?)", (version, now()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(version)
    return applied


def _split_sql(script: str) -> list[str]:
    """Split a migration script into statements (no triggers with inner ';' are used)."""
    statements = []
    buffer = ""
    for line in script.splitlines():
        code = line.split("--", 1)[0]
        buffer += code + "\n"
        if code.rstrip().endswith(";") and sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
