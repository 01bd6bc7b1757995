"""A run's phrase table: federated discovery on its fitting clients, the table cut to a byte budget, the gate
fitted on its validation clients; written into the run directory for ``keyboard-lm export``.

The users are the run's own: discovery reads only the training clients that fitted the model (the
validation clients choose the gate; ``run_clients``), and held-out clients are never read; each client's sentences
encoded with the run's vocabulary on its side of the federated computation
(``keyboard_lm.federated.phrase_discovery``). The run directory gets ``phrases.bin`` (the table,
``keyboard_lm.text.phrase_table``) and ``phrase_gate.json`` (the gate, the fit's report and what
discovery released); a stopped discovery resumes from ``phrases.state``.
"""

from __future__ import annotations

import logging
import json
import os
import tempfile

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.split import SplitConfig, split_clients, validation_clients
from keyboard_lm.errors import ConfigError
from keyboard_lm.export.budget import DEFAULT_BUDGET_BYTES
from keyboard_lm.federated.phrase_discovery import PhraseDiscoveryConfig, discover_phrases
from keyboard_lm.models.run_dir import atomic_write, load_run
from keyboard_lm.text.phrase_table import PhraseCounts, PhraseTable, TableConfig
from keyboard_lm.text.spec import SPECIAL_TOKENS

logger = logging.getLogger(__name__)

STATE_FILE = "phrases.state"
COUNTS_FILE = "phrase_counts.json"
#: What the table adds to the file beyond its bytes, at most: its zip headers (about 120 bytes) and the
#: metadata's "phrases" object (the gate and what discovery released; under 1 KiB deflated).
ARCHIVE_ENTRY_BYTES = 2048
#: Never stored as a next word: the table suggests words and the end of a sentence, nothing else.
_NOT_NEXT = (SPECIAL_TOKENS.pad_id, SPECIAL_TOKENS.bos_id, SPECIAL_TOKENS.oov_id)


#: The share of a run's training clients that fits the gate when the run kept no validation clients.
GATE_FRACTION = 0.1


def run_clients(run, corpus: Corpus) -> tuple[list[str], list[str], bool]:
    """(discovery clients, gate clients, whether the model never trained on the gate clients) of ``run``.

    The run's validation clients fit the gate when it kept some; otherwise GATE_FRACTION of its training
    clients do (the model saw their text, so the gate leans a little towards the model), and discovery
    reads the rest. Held-out clients are never read.
    """
    if not run.record.split:
        raise ConfigError(f"{run.path}: run.json records no data split; the phrase table needs the run's clients")
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig(**run.record.split))
    # A federated run records its recipe under "federated", a centralized one under "hyperparameters".
    fraction = ((run.record.federated or {}).get("validation_fraction")
                or (run.record.hyperparameters or {}).get("validation_fraction"))
    fit_ids, val_ids = validation_clients(train_ids, fraction or GATE_FRACTION, run.record.split["seed"])
    return fit_ids, val_ids, bool(fraction)


def released_counts(run_dir: str, discovery: PhraseDiscoveryConfig, log=None) -> PhraseCounts | None:
    """The counts an earlier discovery of this run released with the same settings, or None.

    A release is kept (``phrase_counts.json``) so that cutting the table again (another budget) is not
    another release: under noise, every discovery spends privacy budget.
    """
    log = log or logger.info  # ``log``: deprecated, a callable taking the lines
    path = os.path.join(run_dir, COUNTS_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            counts = PhraseCounts.from_dict(json.load(f), path)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read the run's released phrase counts ({e}); remove it to discover "
                          "again") from None
    info = counts.info
    same = (info.get("k_anonymity") == discovery.k_anonymity
            and info.get("max_pairs_per_user") == discovery.max_pairs_per_user
            and (info.get("differential_privacy") or {}).get("noise_multiplier") == discovery.noise_multiplier)
    if same:
        log(f"phrases: reusing the counts released earlier ({path}); no new release")
    return counts if same else None


def run_counts(run_dir: str, corpus: Corpus, fit_ids, vocab, discovery: PhraseDiscoveryConfig,
               log=None) -> PhraseCounts:
    """The counts discovery releases on ``fit_ids`` (encoded with the run's ``vocab``): an earlier release of
    this run with the same settings (``released_counts``), else a new one, kept in the run directory."""
    log = log or logger.info  # ``log``: deprecated, a callable taking the lines
    counts = released_counts(run_dir, discovery, log)
    if counts is None:
        # Each client encodes its own text with the run's vocabulary (the model's broadcast): its side of discovery.
        sentences = {c: [vocab.encode(s) for s in corpus.sentences([c])] for c in fit_ids}
        counts = discover_phrases(sentences, len(vocab), discovery, state_path=os.path.join(run_dir, STATE_FILE),
                                  progress=log)
        atomic_write(os.path.join(run_dir, COUNTS_FILE), json.dumps(counts.to_dict()).encode("utf-8"), mode=0o600)
    return counts


def restricted(counts: PhraseCounts, vocab_size: int) -> PhraseCounts:
    """The counts a pruned vocabulary can use: no id at or past ``vocab_size`` (a dropped word is <oov>)."""
    return PhraseCounts({c: u for c, u in counts.contexts.items() if max(c) < vocab_size},
                        {(c, w): u for (c, w), u in counts.pairs.items() if w < vocab_size and max(c) < vocab_size},
                        counts.info)


def _exported(run_dir: str, vocab_size: int, work):
    """The run exported alone with ``vocab_size`` words, to a temporary file of ``work``: (ModelFile, bytes)."""
    from keyboard_lm.export.tflite_export import export_run
    from keyboard_lm.inference.model_file import ModelFile

    fd, path = tempfile.mkstemp(prefix=".phrases-model-", suffix=".tflite", dir=work)
    os.close(fd)
    try:
        export_run(run_dir, path, budget_bytes=None, phrases=False, vocab_size=vocab_size)
        return ModelFile.load(path), os.path.getsize(path)
    finally:
        for p in (path, path + ".card.json"):
            if os.path.exists(p):
                os.unlink(p)


def room_for_table(run_dir: str, counts: PhraseCounts, table_config: TableConfig, budget_bytes: int | None,
                   log=None):
    """(vocabulary size, table, model file) such that the model and the table fit ``budget_bytes`` together.

    The model alone is exported first; what the table needs beyond the budget comes out of the rarest
    words (``export.pruning``), each worth its embedding row and vocabulary line, re-checked by exporting.
    """
    log = log or logger.info  # ``log``: deprecated, a callable taking the lines
    run = load_run(run_dir)
    v = len(run.vocab)
    for _ in range(4):
        table = PhraseTable.build(restricted(counts, v), v, table_config, exclude=_NOT_NEXT)
        model, size = _exported(run_dir, v, run_dir)
        over = size + table.size_bytes + ARCHIVE_ENTRY_BYTES - budget_bytes if budget_bytes else 0
        if over <= 0:
            return v, table, model
        v -= -(-over // (run.model_config.embedding_dim + 2))  # ceil: about 2 deflated bytes a vocabulary line
        log(f"phrases: {over:,} bytes over the {budget_bytes:,}-byte budget with the table: the vocabulary keeps "
            f"its {v:,} most frequent words")
        if v <= len(run.vocab.special.tokens) + 1:
            break
    raise ConfigError(f"{run_dir}: no vocabulary leaves room for a {table_config.max_bytes:,}-byte phrase table "
                      f"within {budget_bytes:,} bytes; lower --table-bytes")


def learn_phrases(run_dir: str, corpus: Corpus, discovery: PhraseDiscoveryConfig = PhraseDiscoveryConfig(),
                  table_config: TableConfig = TableConfig(), budget_bytes: int | None = DEFAULT_BUDGET_BYTES,
                  log=None) -> dict:
    """Discover, cut and fit ``run_dir``'s phrase table (module docstring); returns what phrase_gate.json holds.

    ``budget_bytes``: the exported file's, model and table together (None: no budget, no pruning).
    """
    log = log or logger.info  # ``log``: deprecated, a callable taking the lines

    from keyboard_lm.export.tflite_export import RUN_GATE_FILE, RUN_PHRASES_FILE
    from keyboard_lm.suggestion_evaluation import fit_gate

    run = load_run(run_dir)
    fit_ids, val_ids, unseen = run_clients(run, corpus)
    if not unseen:
        log(f"phrases: the run kept no validation clients; {len(val_ids)} of its training clients fit the gate and "
            "the others build the table")
    vocab = run.vocab
    counts = run_counts(run_dir, corpus, fit_ids, vocab, discovery, log)
    vocab_size, table, model = room_for_table(run_dir, counts, table_config, budget_bytes, log)
    log(f"phrases: table of {len(table):,} contexts, {len(table.ids):,} next words, {table.size_bytes:,} bytes "
        f"(budget {table_config.max_bytes:,}); the model keeps {vocab_size:,} of {len(vocab):,} words")
    # The gate is fitted on the model as it is deployed (int8, the vocabulary the file will have).
    gate, report = fit_gate(model, table, corpus, val_ids)
    gained = sum(c["hits"] - c["hits_without"] for c in report["cells"].values())
    log(f"phrases: gate fitted on {len(val_ids)} validation clients: {gained:+,} recall@3 hits there")
    fitted = {"gate": gate.to_dict(), "fit": report, "discovery": counts.info, "vocab_size": vocab_size,
              "gate_clients": "validation" if unseen else "training",
              "table": {"bytes": table.size_bytes, "contexts": len(table), "entries": int(len(table.ids)),
                        "max_next": table_config.max_next, "min_share": table_config.min_share,
                        "max_bytes": table_config.max_bytes}}
    atomic_write(os.path.join(run_dir, RUN_PHRASES_FILE), table.to_bytes(), mode=0o644)
    atomic_write(os.path.join(run_dir, RUN_GATE_FILE), json.dumps(fitted, indent=1).encode("utf-8"), mode=0o644)
    return fitted


def phrases_after_training(run_dir: str, corpus: Corpus, *, skip: str | None = None, log=None) -> dict:
    """The phrase step of ``keyboard-lm train`` (federated): learn the run's table unless ``skip`` says why not;
    what it did goes to run.json's "phrases" (a resumed run honours an earlier ``learn: false``).

    Not under differential privacy: noise and a threshold large enough for a budget shared with the model
    release almost nothing at these populations (docs/privacy.md), so a DP run ships the model alone.
    """
    log = log or logger.info  # ``log``: deprecated, a callable taking the lines

    from keyboard_lm.models.run_dir import RunRecord, update_run_info

    run = RunRecord.read(run_dir)
    if skip or (run.phrases or {}).get("learn") is False:
        record = {"learn": False, "reason": skip or run.phrases.get("reason")}
    elif run.differential_privacy:
        record = {"learn": False, "reason": "differential privacy: the run ships the model alone"}
        log("phrases: not learnt under --dp (docs/privacy.md); the run ships the model alone")
    else:
        record = _record(learn_phrases(run_dir, corpus, log=log))
    update_run_info(run_dir, {"phrases": record})
    return record


def phrases_on_a_run(run_dir: str, corpus: Corpus, discovery: PhraseDiscoveryConfig, table_config: TableConfig,
                     budget_bytes: int | None, log=None) -> dict:
    """``keyboard-lm phrases RUN_DIR``: learn (again) a finished run's table; run.json's "phrases" says so.

    Refused on a run trained under differential privacy: its guarantee covers the model alone, and a table
    released under k-anonymity would add a release outside its account (docs/privacy.md).
    """
    log = log or logger.info  # ``log``: deprecated, a callable taking the lines

    from keyboard_lm.models.run_dir import RunRecord, update_run_info

    if RunRecord.read(run_dir).differential_privacy:
        raise ConfigError(f"{run_dir}: the run was trained under differential privacy; its guarantee covers the model "
                          "alone and a phrase table would be released outside it (docs/privacy.md)")
    fitted = learn_phrases(run_dir, corpus, discovery, table_config, budget_bytes, log)
    update_run_info(run_dir, {"phrases": _record(fitted)})
    return fitted


def _record(fitted: dict) -> dict:
    """run.json's "phrases" of a learnt table."""
    return {"learn": True, "contexts": fitted["table"]["contexts"], "bytes": fitted["table"]["bytes"],
            "vocab_size": fitted["vocab_size"], "k_anonymity": fitted["discovery"]["k_anonymity"],
            "max_pairs_per_user": fitted["discovery"]["max_pairs_per_user"], "gate_clients": fitted["gate_clients"],
            "validation_hits_gained": sum(c["hits"] - c["hits_without"] for c in fitted["fit"]["cells"].values())}

