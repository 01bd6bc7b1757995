"""The Kneser-Ney 5-gram reference every study compares against: same split, same 10k vocabulary."""

from __future__ import annotations

from benchmarks.common.corpora import ngram_args


def ngram_pooled(data: str, fmt: str, partition: str = "natural", num_clients: int | None = None) -> dict:
    """The Kneser-Ney 5-gram on the default split and a 10k vocabulary of the training clients, pooled.

    ``partition``/``num_clients`` re-partition the corpus as `train --partition` does (seeded by the
    default split seed).
    """
    return ngram_result(data, fmt, partition, num_clients)["pooled"]


def ngram_result(data: str, fmt: str, partition: str = "natural", num_clients: int | None = None) -> dict:
    """``ngram_pooled``'s evaluation whole: pooled and per held-out user."""
    from keyboard_lm.baselines.ngram import KneserNey
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.partition import apply_partition
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.evaluation import evaluate_predict_fn
    from keyboard_lm.text.vocabulary import Vocabulary

    corpus = apply_partition(load_corpus(data, fmt), partition, num_clients, SplitConfig().seed)
    train_ids, heldout_ids = split_clients(corpus.client_ids, SplitConfig())
    vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), 10_000)
    kn = KneserNey(len(vocab), 5).fit(vocab.encode(s) for s in corpus.sentences(train_ids))
    return evaluate_predict_fn(kn.predict_log_probs, corpus, heldout_ids, vocab, 20, batch_size=32)


def ngram_on(corpus_args: list[str]) -> dict:
    """The 5-gram's pooled figures on a corpus given as train arguments."""
    return ngram_pooled(*ngram_args(corpus_args))


def ngram_by_user(corpus_args: list[str]) -> dict:
    """The 5-gram's evaluation, pooled and per held-out user, on a corpus given as train arguments."""
    return ngram_result(*ngram_args(corpus_args))
