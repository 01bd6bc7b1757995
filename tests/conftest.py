"""Shared fixtures: real text from the embedded corpus and, where present, Tiny Shakespeare."""

from __future__ import annotations

import functools
import os
import pathlib
import warnings

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", message=".*pkg_resources.*")

REPO = pathlib.Path(__file__).resolve().parent.parent
SHAKESPEARE = pathlib.Path(os.environ.get(
    "KEYBOARD_LM_SHAKESPEARE", REPO.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"))
SPAMASSASSIN = pathlib.Path(os.environ.get(
    "KEYBOARD_LM_SPAMASSASSIN", REPO.parent / "shared" / "data" / "spamassassin-ham" / "ham.mbox"))
GOLDEN = REPO / "tests" / "golden" / "text_spec_vectors.json"
#: marker -> (file it needs, the environment variable that points elsewhere, what it is)
SHARED_DATA = {"shakespeare": (SHAKESPEARE, "KEYBOARD_LM_SHAKESPEARE", "Tiny Shakespeare"),
               "spamassassin": (SPAMASSASSIN, "KEYBOARD_LM_SPAMASSASSIN", "the SpamAssassin ham mbox")}


GOLDEN_MODELS = REPO / "tests" / "golden" / "models"


def archive_start(model: pathlib.Path) -> int:
    """Where a model file's zip archive (vocabulary, metadata) starts: the flatbuffer's length."""
    import zipfile

    with zipfile.ZipFile(model) as z:
        return min(i.header_offset for i in z.infolist())


def compacted_copy(model: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """``model`` (a committed golden file, exported before ``keyboard_lm.export.compaction``) with its
    flatbuffer compacted as the exporter now writes it and the file sealed again; the archive unchanged."""
    from keyboard_lm.export.compaction import compact
    from keyboard_lm.inference.model_file import seal

    data, start = model.read_bytes(), archive_start(model)
    out.write_bytes(seal(compact(data[:start]) + data[start:]))
    return out


def realistic_words(n: int) -> list[str]:
    """n distinct English-like words: the embedded corpus' words and their inflections."""
    from keyboard_lm.data.corpora import load_default

    base = sorted({w for s in load_default().sentences() for w in s})
    words, seen = [], set()
    for affix in ("{}", "{}s", "{}ed", "{}ing", "un{}", "{}ly", "re{}", "{}er", "{}est"):
        for w in base:
            cand = affix.format(w)
            if cand not in seen:
                seen.add(cand)
                words.append(cand)
            if len(words) == n:
                return words
    raise AssertionError("not enough words")


def paper_size_run(tmp_path, model_type: str = "cifg", vocab_words: int = 9996, quantization: str = "none",
                   bias_seed: int | None = None) -> str:
    """A paper-size model (untrained weights) with a 10k vocabulary of real-looking words; with ``bias_seed``,
    biases drawn from N(0, 0.1) as after training (the converter folds a zero bias, the SI-CIFG's start, away)."""
    import numpy as np

    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model, weights_dict
    from keyboard_lm.models.run_dir import save_run
    from keyboard_lm.text import Vocabulary

    words = realistic_words(vocab_words)
    vocab = Vocabulary.build({w: len(words) - i for i, w in enumerate(words)}, vocab_words + 4)
    config = ModelConfig(model_type, len(vocab), quantization=quantization)
    run_dir = str(tmp_path / f"{model_type}-{quantization}")
    weights = weights_dict(build_model(config))
    if bias_seed is not None:
        rng = np.random.default_rng(bias_seed)
        weights = {k: rng.normal(0, 0.1, w.shape).astype(w.dtype) if "bias" in k else w for k, w in weights.items()}
    save_run(run_dir, config, vocab, weights, {"trainer": "centralized", "hyperparameters": {"seq_len": 20}})
    return run_dir


#: Marks every process this test run starts (inherited through the environment): what must be gone at its end.
SESSION_MARK = "KEYBOARD_LM_TEST_SESSION"


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller set both for its workers
    import secrets

    os.environ[SESSION_MARK] = secrets.token_hex(8)
    if worker_isolation_unavailable() is not None and "KEYBOARD_LM_ALLOW_ALL_INTERFACES" not in os.environ:
        # Where TFF's local worker cannot be isolated, a federated run is refused unless allowed; the suite
        # allows it (its isolation tests skip, saying why) so that the rest still runs on such a machine.
        os.environ["KEYBOARD_LM_ALLOW_ALL_INTERFACES"] = "1"
        config._keyboard_lm_all_interfaces = worker_isolation_unavailable()


def pytest_report_header(config):
    why = getattr(config, "_keyboard_lm_all_interfaces", None)
    if why:
        return (f"keyboard_lm: TFF's local workers listen on every interface during this run: {why}; "
                f"the isolation tests skip")
    return None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """The run leaves nothing behind: no process it started (TFF workers, relays, trainers) still runs, so none
    listens either. Checked once, in the process that started the run, after pytest-xdist's workers ended."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not os.environ.get(SESSION_MARK):
        return
    import signal
    import sys
    import time

    from tests.process_tree import listening, with_environment

    runtime = sys.modules.get("keyboard_lm.federated.runtime")
    if runtime is not None:  # tests ran in this very process (no xdist): its workers end now, as at its exit
        runtime.stop_workers()
    deadline = time.monotonic() + 15.0  # workers that were told to stop finish their own exit hooks first
    while (left := with_environment(SESSION_MARK, os.environ[SESSION_MARK])) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not left:
        return
    sockets = listening(left)
    names = {pid: _comm(pid) for pid in left}
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    line = (f"keyboard_lm: the test run left {len(left)} process(es) running: "
            f"{', '.join(f'{pid} {name}' for pid, name in names.items())}; listening: {sockets or 'none'} "
            f"(killed now)")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(line, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return "?"


# The extended tier: end-to-end runs that a faster test of the same code also covers in the default tier, kept
# for CI because only a whole run shows a fault between processes, a kill between two files or a build from
# Maven. `bash dev.sh test` leaves them out so that the default suite stays under 10 minutes on 2 cores;
# `bash dev.sh test-extended` and CI (.ci/run) run them. "file" marks a whole file, "file::test" every case of a
# test, "file::test[case]" one case. The default tier's cover is named beside each.
EXTENDED = (
    # Processes talking over sockets: remote workers, hosts in network namespaces, TLS relays
    # (default tier: test_local_worker.py, test_federated_parts.py's runtime tests).
    "test_remote_workers.py", "test_network_hosts.py", "test_worker_isolation.py",
    # Builds: Maven, the jar, the guide's snippets against the Android API, the core on an emulated aarch64
    # JVM, the predictor installed on Python 3.12/3.13 (default tier: test_android_core.py's JUnit run).
    "test_android_maven.py", "test_android_core_jar.py", "test_embedding_guide.py", "test_predictor_install.py",
    "test_android_core.py::test_java_core_passes_junit_on_an_emulated_aarch64_jvm",
    # A benchmark script's variants (three paper-size models built and trained briefly).
    "test_pretrain_speed_script.py",
    # Kill, cut and resume end to end (default tier: test_federated_loop.py reads a saved program state back,
    # test_run_dir_faults.py's other faults, test_centralized_resume.py's other tests).
    "test_server_average.py::test_averaged_federated_run_saves_the_average_and_resumes_it",
    "test_federated_training.py::test_resumed_run_ends_like_an_uninterrupted_run",
    "test_federated_training.py::test_run_killed_mid_training_resumes_to_the_same_result",
    "test_run_directories.py::test_resume_without_rounds_continues_to_the_runs_own_count",
    "test_run_dir_faults.py::test_a_full_disk_during_resume_is_one_line_and_run_json_stays_at_its_checkpoint",
    "test_centralized_resume.py::test_resumed_run_ends_like_an_uninterrupted_run",
    "test_tree_restarts.py::test_train_with_restarts_accounts_per_tree_and_resumes_into_the_same_trees",
    "test_blt.py::test_train_dp_blt_runs_in_tff_resumes_and_records_the_matrix",
    # Audits and paper protocols (default tier: test_privacy_train.py's DP runs, test_privacy_canaries.py).
    "test_privacy_train.py::test_an_audit_from_a_base_is_calibrated_against_the_start",
    "test_privacy_train.py::test_audit_canaries_trains_audits_and_reaudits",
    "test_federated_parts.py::test_ji_protocol_options_build_a_process_that_trains",
    # A second model size or corpus through the same path (default tier: the dp-ftrl case, test_export.py's
    # quantization-aware export, test_client_data.py's split of the roles).
    "test_warm_start.py::test_federated_warm_start_sends_the_base_in_round_one[fedavg]",
    "test_federated_training.py::test_quantization_aware_federated_run_exports_exactly",
    "test_federated_training.py::test_federated_round_on_shakespeare_roles",
    "test_phrase_discovery.py::test_decoder_finds_what_tffs_decode_iblt_tf_finds[2000]",
    "test_federated_training.py::test_each_algorithm_runs_a_round[fedavg-extra3]",  # compression: test_federated_parts
    "test_federated_training.py::test_each_algorithm_runs_a_round[fedavg-extra4]",  # client clip: its unit tests
    # A component's whole run where its own unit tests cover it (default tier: test_ngram_teacher.py's and
    # test_models.py's unit tests, test_cli_models.py's centralized run, test_privacy_train.py's DP-FedAvg run,
    # test_warm_start.py's federated warm start, test_federated_loop.py, test_layering.py's static rules, the
    # in-process lock test of test_run_dir_faults.py).
    "test_recipes.py::test_default_centralized_recipe_is_recorded_and_keeps_the_best_epoch",
    "test_ngram_teacher.py::test_centralized_run_with_teacher_records_it_and_trains",
    "test_cli_models.py::test_si_cifg_trains_with_plain_sgd",
    "test_privacy_train.py::test_dp_ftrl_calibrated_to_epsilon_follows_its_schedule_and_resumes",
    "test_warm_start.py::test_centralized_warm_start_begins_where_the_base_ended",
    "test_federated_parts.py::test_a_process_built_again_from_the_same_parts_is_reused_and_draws_the_same_weights",
    "test_run_directories.py::test_split_seed_is_apart_from_the_training_seed",
    "test_layering.py::test_layering_holds_transitively",
    "test_run_dir_faults.py::test_a_second_run_on_a_held_directory_is_refused_at_once",
)


def _extended(item) -> bool:
    path, _, case = item.nodeid.partition("::")
    path = path.rsplit("/", 1)[-1]
    return path in EXTENDED or f"{path}::{case.split('[', 1)[0]}" in EXTENDED or f"{path}::{case}" in EXTENDED


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _extended(item):
            item.add_marker(pytest.mark.extended)
    # Tests marked heavy (subprocesses, TFF workers, long waits) go first, so the two xdist workers overlap
    # them with the many short tests instead of finishing on one long tail.
    items.sort(key=lambda item: "heavy" not in item.keywords)
    for marker, (path, variable, what) in SHARED_DATA.items():
        if path.is_file():
            continue
        skip = pytest.mark.skip(reason=f"{what} not found at ../shared/data/{path.parent.name}/{path.name} "
                                       f"(present in CI; set {variable} to run these)")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With KEYBOARD_LM_TEST_CPU=FILE, append each test's wall and CPU seconds (its own process and the
    subprocesses it waited for, setup and teardown included) to FILE as JSON lines: where the suite's CPU goes,
    which ``--durations`` (wall time only) does not show on a machine whose cores are all busy."""
    path = os.environ.get("KEYBOARD_LM_TEST_CPU")
    if not path:
        yield
        return
    import json
    import resource
    import time

    def cpu(who):
        usage = resource.getrusage(who)
        return usage.ru_utime + usage.ru_stime

    start = (time.perf_counter(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN))
    yield
    wall, own, children = (time.perf_counter() - start[0], cpu(resource.RUSAGE_SELF) - start[1],
                           cpu(resource.RUSAGE_CHILDREN) - start[2])
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"test": item.nodeid, "wall": round(wall, 2), "cpu": round(own, 2),
                            "children": round(children, 2)}) + "\n")


@functools.lru_cache(maxsize=None)
def worker_isolation_unavailable() -> str | None:
    """Why ``keyboard-lm worker`` cannot run TFF's worker in a network namespace here (None: it can).

    Asked once per test process (the check starts a throwaway child): no TFF worker binary, or namespaces refused.
    """
    from keyboard_lm.errors import KeyboardLMError
    from keyboard_lm.federated import worker_process, worker_relay

    try:
        worker_process.worker_binary()
    except KeyboardLMError as e:
        return str(e)
    why = worker_relay.check()
    return None if why is None else f"this system does not permit network namespaces ({why})"


def write_word_chain_users(path, users: int, per_user: int, seed: int, words: list[str], length: int) -> None:
    """A JSONL corpus of ``users`` users, each with ``per_user`` sentences of a seeded word chain (steps of 1-3
    through ``words``): small, learnable, and the same for a given seed."""
    import json

    import numpy as np

    rng = np.random.RandomState(seed)
    with open(path, "w", encoding="utf-8") as f:
        for u in range(users):
            for _ in range(per_user):
                text = " ".join(words[i] for i in np.cumsum(rng.randint(1, 4, size=length)) % len(words))
                f.write(json.dumps({"user": f"user{u}", "text": text}) + "\n")


def assert_in_top_k(word: str, ranked, k: int = 3) -> None:
    """Assert ``word`` is among the first ``k`` of ``ranked`` ((word, p) pairs or a word -> p dict, best first).

    The assertion a freshly trained fixture may carry about a ranking (tests/README.md): its exact order
    depends on the trained weights to the last bit, which differ between CPUs.
    """
    words = list(ranked)[:k] if isinstance(ranked, dict) else [w for w, _ in list(ranked)[:k]]
    assert word in words, f"{word!r} not in the top {k}: {words}"


@pytest.fixture(scope="session")
def shakespeare_path() -> str:
    return str(SHAKESPEARE)


@pytest.fixture(scope="session")
def shakespeare(shakespeare_path):
    from keyboard_lm.data.corpora import load_shakespeare

    return load_shakespeare(shakespeare_path)


@pytest.fixture(scope="session")
def default_corpus():
    from keyboard_lm.data.corpora import load_default

    return load_default()


@pytest.fixture(scope="session")
def golden_cases():
    import json

    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)["cases"]


#: Every flag of the small fixtures' training, so a change of `train`'s defaults does not change them: the
#: recipe the tests were tuned on; --split-seed 1 is the split these fixtures always had.
SMALL_RUN_RECIPE = ["--units", "48", "--embedding-dim", "24", "--vocab-size", "1000", "--epochs", "6",
                    "--batch-size", "32", "--optimizer", "adam", "--lr", "0.01", "--seed", "1", "--split-seed", "1",
                    "--dropout", "0", "--validation-fraction", "0", "--weight-drop", "0", "--weight-average", "0",
                    "--ngram-teacher", "0"]


def build_once(tmp_path_factory, name: str, build) -> pathlib.Path:
    """``build(directory)`` once per test run, shared by every pytest-xdist worker; returns the directory.

    The first worker to ask builds under an exclusive lock while the others wait, then all reuse what it
    wrote (the pattern of pytest-xdist's docs, with the standard library's ``fcntl`` as the lock).
    Without xdist it is an ordinary session-scoped build.
    """
    import fcntl

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's directory, shared
    target, done = root / f"shared-{name}", root / f"shared-{name}.done"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if target.exists():  # a build that failed half-way in another worker: start again
                import shutil

                shutil.rmtree(target)
            target.mkdir()
            build(target)
            done.touch()
    return target


def _train_small(out: pathlib.Path, *extra: str) -> None:
    from keyboard_lm.cli import main

    assert main(["train", "--centralized", "--out", str(out / "run"), *SMALL_RUN_RECIPE, *extra]) == 0


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    """A small CIFG trained centrally on the embedded corpus (a real run directory), built once per run."""
    return str(build_once(tmp_path_factory, "small_run", _train_small) / "run")


@pytest.fixture(scope="session")
def small_qat_run(tmp_path_factory):
    """``small_qat_run(mode)``: as ``small_run``, trained quantization-aware for export mode ``mode``."""

    def get(mode: str) -> str:
        # One epoch, not six: what its tests check is the export's exactness, not the model's quality.
        build = lambda out: _train_small(out, "--quantization-aware", mode, "--epochs", "1")  # noqa: E731
        return str(build_once(tmp_path_factory, f"small_qat_{mode}", build) / "run")

    return get


@pytest.fixture(scope="session")
def small_tflite(small_run, tmp_path_factory):
    """``small_run`` exported with the real exporter."""
    from keyboard_lm.export.tflite_export import export_run

    def build(out):
        export_run(small_run, str(out / "model.tflite"))

    return str(build_once(tmp_path_factory, "small_tflite", build) / "model.tflite")


@pytest.fixture(scope="session")
def small_char_encoder(small_run, small_tflite, default_corpus, tmp_path_factory):
    """``(encoder file, build report)``: a personal-word encoder for ``small_tflite``, 2 epochs on 3,000
    positions of the embedded corpus, built once (the encoder's own tests and the OOV benchmark's share it)."""
    import json

    from keyboard_lm.char_encoder.training import build_char_encoder_file

    def build(out):
        report = build_char_encoder_file(small_run, small_tflite, str(out / "enc.tflite"), corpus=default_corpus,
                                         epochs=2, max_positions=3000)
        (out / "report.json").write_text(json.dumps(report))

    out = build_once(tmp_path_factory, "small_char_encoder", build)
    return str(out / "enc.tflite"), json.loads((out / "report.json").read_text())
