"""A user's own files (history, personal words) and the arguments that name them: written without a
predictable name or a followed link, never seen half-written, read within the code's bounds, refused in
one line; and the predict/bench commands' inputs."""

import io
import json
import os
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.errors import ConfigError, DataError
from keyboard_lm.inference import Predictor
from keyboard_lm.inference.personal_words import MAX_PERSONAL_WORDS, PersonalState
from keyboard_lm.inference.user_history import MAX_FILE_BYTES, MAX_WORDS, UserHistory

MODEL = os.path.join(os.path.dirname(__file__), "golden", "models", "cifg_weight-only.tflite")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__import__("keyboard_lm").__file__)))


def _history(words: int = 300) -> UserHistory:
    h = UserHistory()
    for i in range(words):
        h.learn(["see", "you", f"word{i}", "café"])
    return h


def _personal(words: int = 3, dim: int = 8) -> PersonalState:
    state = PersonalState("fingerprint", dim, hidden=4)
    state.add_words([f"zorb{i}" for i in range(words)], np.ones((words, dim), np.float32))
    return state


def _save(kind: str, path) -> None:
    (_history() if kind == "history" else _personal()).save(str(path))


# -- writing ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["history", "personal"])
def test_a_link_planted_at_the_old_temp_name_is_never_written_through(tmp_path, kind):
    victim = tmp_path / "victim"
    victim.write_text("precious", encoding="utf-8")
    target = tmp_path / "user.file"
    os.symlink(victim, f"{target}.tmp")
    _save(kind, target)
    _save(kind, target)
    assert victim.read_text(encoding="utf-8") == "precious"
    assert target.is_file() and not target.is_symlink()
    # the temp files were random names, created exclusively, and none is left behind
    assert sorted(os.listdir(tmp_path)) == ["user.file", "user.file.lock", "user.file.tmp", "victim"]
    assert oct(target.stat().st_mode & 0o777) == "0o600"  # what a user typed is private to them


@pytest.mark.parametrize("kind", ["history", "personal"])
def test_a_target_that_is_a_symbolic_link_is_refused_and_left_as_it_is(tmp_path, kind):
    victim = tmp_path / "victim"
    victim.write_text("precious", encoding="utf-8")
    target = tmp_path / "user.file"
    os.symlink(victim, target)
    with pytest.raises((DataError, ConfigError), match=r"user\.file: is a symbolic link.*give the real path"):
        _save(kind, target)
    assert target.is_symlink() and victim.read_text(encoding="utf-8") == "precious"


def test_a_link_at_the_lock_name_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious", encoding="utf-8")
    os.symlink(victim, tmp_path / "me.history.lock")
    with pytest.raises(DataError, match=r"me\.history\.lock: the lock of the user history is a symbolic link"):
        _history().save(str(tmp_path / "me.history"))
    assert victim.read_text(encoding="utf-8") == "precious" and not (tmp_path / "me.history").exists()


def test_a_failed_write_is_one_line_and_leaves_no_temp_file(tmp_path):
    (tmp_path / "me.history").mkdir()  # the rename cannot replace a directory
    with pytest.raises(DataError, match=r"me\.history: cannot write the user history .*previous file is unchanged"):
        _history().save(str(tmp_path / "me.history"))
    assert sorted(os.listdir(tmp_path)) == ["me.history", "me.history.lock"]


def test_a_history_load_would_refuse_is_not_written(tmp_path):
    path = tmp_path / "me.history"
    _history(3).save(str(path))
    before = path.read_bytes()
    h = UserHistory()
    for i in range(1800):  # words of 2,500 letters: about 9 MB of JSON
        h.learn([f"{i}{'x' * 2500}"])
    with pytest.raises(DataError, match=f"more than the {MAX_FILE_BYTES:,} a history may have; the previous"):
        h.save(str(path))
    assert path.read_bytes() == before


_SAVER = """
import sys
from keyboard_lm.inference.user_history import UserHistory
path, me = sys.argv[1], sys.argv[2]
h, failures = UserHistory.load(path), 0
for i in range(200):
    h.learn([me, f"word{i}"])
    try:
        h.save(path)
    except Exception as e:
        failures += 1
        print(repr(e), file=sys.stderr)
print(failures)
"""

_READER = """
import os, sys
from keyboard_lm.inference.user_history import UserHistory
path, stop = sys.argv[1], sys.argv[2]
loads = failures = 0
while not os.path.exists(stop) or loads == 0:
    try:
        UserHistory.load(path)
    except Exception as e:
        failures += 1
        if failures < 5:
            print(repr(e), file=sys.stderr)
    loads += 1
print(failures, loads)
"""


@pytest.mark.heavy
def test_two_processes_saving_one_history_never_show_a_reader_a_damaged_file(tmp_path):
    path, stop = tmp_path / "me.history", tmp_path / "stop"
    _history(300).save(str(path))  # about 30 KB: each write takes long enough to be overlapped
    env = {**os.environ, "PYTHONPATH": REPO}
    run = lambda code, *args: subprocess.Popen([sys.executable, "-c", code, str(path), *args], env=env,  # noqa: E731
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = run(_READER, str(stop))
    savers = [run(_SAVER, name) for name in ("alice", "bob")]
    results = [p.communicate(timeout=300) for p in savers]
    stop.touch()
    read = reader.communicate(timeout=300)
    assert [p.returncode for p in (*savers, reader)] == [0, 0, 0], [r[1][-400:] for r in (*results, read)]
    assert [out.split() for out, _ in results] == [["0"], ["0"]], [err[:400] for _, err in results]
    failures, loads = map(int, read[0].split())
    assert failures == 0 and loads > 0, read[1][:400]
    final = UserHistory.load(str(path))  # the last save is whole, and holds its own saver's last words
    assert final.count("word199") > 0
    assert sorted(os.listdir(tmp_path)) == ["me.history", "me.history.lock", "stop"]


def test_a_save_on_another_thread_while_the_history_learns_is_always_whole(tmp_path):
    h, path, done = _history(1000), tmp_path / "me.history", threading.Event()

    def learn():
        for i in range(30_000):
            h.learn_word("see", f"new{i % 3000}")
        done.set()

    thread = threading.Thread(target=learn)
    thread.start()
    saves = 0
    while not done.is_set() or saves == 0:
        h.save(str(path))
        UserHistory.load(str(path))  # a word learnt during the snapshot would make its clock too old
        saves += 1
    thread.join()


# -- reading within the code's bounds ---------------------------------------------------------------
def _write(path, d, text=None):
    path.write_text(text if text is not None else json.dumps(d), encoding="utf-8")
    return str(path)


def test_a_huge_integer_in_a_history_is_one_line_naming_the_file_and_the_field(tmp_path):
    text = json.dumps(_history(3).to_dict())
    path = _write(tmp_path / "big.history", None, text.replace('"clock": 12', '"clock": ' + "9" * 5000))
    with pytest.raises(DataError, match=r"big\.history: damaged user history: clock is a 5,000-digit number"):
        UserHistory.load(path)
    d = _history(3).to_dict()
    d["words"][0][1] = 1
    word = d["words"][0][0]
    text = json.dumps(d, ensure_ascii=False).replace(f'["{word}", 1,', f'["{word}", {"7" * 5000},')
    with pytest.raises(DataError, match=r"damaged user history: words\[0\]'s count is a 5,000-digit number"):
        UserHistory.load(_write(tmp_path / "count.history", None, text))


def test_a_huge_integer_in_a_history_is_exit_2_from_the_cli(tmp_path, capsys):
    text = json.dumps(_history(3).to_dict()).replace('"clock": 12', '"clock": ' + "9" * 5000)
    path = _write(tmp_path / "big.history", None, text)
    assert main(["predict", MODEL, "see you", "--history", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "big.history: damaged user history: clock" in err


@pytest.mark.parametrize("field, value, message", [
    ("beta", "Infinity", "beta is Infinity"),
    ("beta", "NaN", "beta is NaN"),
    ("beta", "1e308", r"beta is 1e\+308, not a finite number in"),
    ("half_life", "-Infinity", "half_life is -Infinity"),
    ("half_life", "0", "half_life is 0, not a finite number in"),
    ("weight", "NaN", "weight is NaN"),
    ("weight", "1.5", "weight is 1.5"),
    ("clock", "2.5", "clock is 2.5, not an integer"),
    ("total", "[1e999, 12]", "total's count is inf"),
    ("total", "[1, 13]", "total's clock is 13, not an integer in \\[0, 12\\]"),
])
def test_every_parameter_must_be_a_finite_number_in_range(tmp_path, field, value, message):
    d = _history(3).to_dict()
    d[field] = "@@"
    path = _write(tmp_path / "h", None, json.dumps(d).replace('"@@"', value))
    with pytest.raises(DataError, match=f"h: damaged user history: {message}"):
        UserHistory.load(path)


def test_a_history_with_infinite_beta_never_gives_nan_probabilities(tmp_path):
    d = _history(3).to_dict()
    d["beta"] = float("inf")
    path = _write(tmp_path / "inf.history", d)
    try:
        h = UserHistory.load(path)
    except DataError as e:
        assert "inf.history: damaged user history: beta is Infinity" in str(e)
    else:  # what loaded must still be a distribution
        assert all(np.isfinite(p) for p in h.distribution("you").values())


@pytest.mark.parametrize("entry, message", [
    (["word", -3.0, 1], r"words\[0\]'s count is -3.0"),
    (["word", 1.0, 1.5], r"words\[0\]'s clock is 1.5"),
    (["word", 1.0, 99], r"words\[0\]'s clock is 99"),
    (["", 1.0, 1], r"words\[0\] holds '', not a word"),
    (["<s>", 1.0, 1], r"words\[0\] counts <s> as a word"),
    ([7, 1.0, 1], r"words\[0\] holds 7, not a word"),
    ("word", r"words\[0\] is 'word', not \[word, count, clock\]"),
])
def test_each_entry_is_checked_and_named(tmp_path, entry, message):
    d = _history(3).to_dict()
    d["words"][0] = entry
    with pytest.raises(DataError, match=f"h: damaged user history: {message}"):
        UserHistory.load(_write(tmp_path / "h", d))


def test_a_history_file_cannot_declare_its_own_bounds(tmp_path):
    d = _history(3).to_dict()
    d["max_words"] = 10_000_000
    d["words"] += [[f"extra{i}", 1.0, 12] for i in range(MAX_WORDS + 1)]
    with pytest.raises(DataError, match=r"declared\.history: damaged user history: max_words is 10000000, not an "
                                        r"integer in \[1, 20,000\]"):
        UserHistory.load(_write(tmp_path / "declared.history", d))
    d["max_words"] = 2000  # within the code's bound, but the file holds more than it
    with pytest.raises(DataError, match=r"20,007 words, more than its bound of 2,000"):
        UserHistory.load(_write(tmp_path / "declared.history", d))


def test_a_history_file_above_the_size_the_code_reads_is_refused_before_it_is_parsed(tmp_path):
    d = _history(3).to_dict()
    text = json.dumps(d)
    path = _write(tmp_path / "huge.history", None, text[:-1] + " " * (MAX_FILE_BYTES - len(text) + 1) + "}")
    assert os.path.getsize(path) == MAX_FILE_BYTES + 1
    with pytest.raises(DataError, match=f"huge.history: {MAX_FILE_BYTES + 1:,} bytes, more than the "
                                        f"{MAX_FILE_BYTES:,} a user history may have"):
        UserHistory.load(path)
    os.mkfifo(tmp_path / "fifo")  # nobody writes it: the load must not wait
    with pytest.raises(DataError, match="fifo: not a regular file"):
        UserHistory.load(str(tmp_path / "fifo"))


def test_the_code_bounds_the_constructor_too():
    for kwargs, name in (({"max_words": MAX_WORDS + 1}, "max_words"), ({"beta": float("inf")}, "beta"),
                         ({"half_life": float("nan")}, "half_life"), ({"max_pairs": 10.5}, "max_pairs"),
                         ({"max_words": True}, "max_words")):
        with pytest.raises(ConfigError, match=f"{name} must be"):
            UserHistory(**kwargs)


def _npz(path, **arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())
    return str(path)


def test_a_personal_state_with_nan_or_too_many_words_is_refused(tmp_path):
    state = _personal()
    state.w1[0, 0] = np.nan
    state.save(str(tmp_path / "nan.personal"))
    with pytest.raises(ConfigError, match=r"nan\.personal: damaged personal state file \(w1 holds a NaN"):
        PersonalState.load(str(tmp_path / "nan.personal"), "fingerprint")
    state = _personal()
    n = MAX_PERSONAL_WORDS + 1
    state.words = [f"w{i}" for i in range(n)]
    state.base, state.offset, state.bias = (np.zeros((n, 8), np.float32), np.zeros((n, 8), np.float32),
                                            np.zeros(n, np.float32))
    state.save(str(tmp_path / "many.personal"))
    with pytest.raises(ConfigError, match=r"many\.personal: damaged personal state file \(1,001 words"):
        PersonalState.load(str(tmp_path / "many.personal"), "fingerprint")


def test_a_personal_state_cannot_make_the_loader_allocate_what_it_does_not_hold(tmp_path):
    state = _personal()
    state.save(str(tmp_path / "ok.personal"))
    with np.load(str(tmp_path / "ok.personal")) as data:
        arrays = {k: data[k] for k in data.files}
    # declared hidden sizes the file's arrays do not have: the adapter would be built at 10**12 units
    path = _npz(tmp_path / "hidden.personal", **{**arrays, "hidden": np.array([10 ** 12])})
    with pytest.raises(ConfigError, match=r"hidden\.personal: damaged personal state file \(w1 has shape"):
        PersonalState.load(path, "fingerprint")
    # an array header that declares far more than its entry holds (numpy would allocate 9.6 TB for it)
    with zipfile.ZipFile(tmp_path / "ok.personal") as z:
        members = {n: z.read(n) for n in z.namelist()}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (300_000_000_000, 8)})
    members["base.npy"] = header.getvalue() + arrays["base"].tobytes()
    with zipfile.ZipFile(tmp_path / "header.personal", "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    with pytest.raises(ConfigError, match=r"header\.personal: not a keyboard_lm personal state file \(array "
                                          r"base\.npy declares"):
        PersonalState.load(str(tmp_path / "header.personal"), "fingerprint")


# -- arguments ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def predictor():
    return Predictor.load(MODEL)


@pytest.mark.parametrize("blocklist, message", [
    ("the", r"blocklist must be a list of words, not a single str \('the'\): pass \['the'\]"),
    (b"the", "not a single bytes"),
    (["the", 3], "blocklist entry 1 is int 3, not a word"),
    (42, "blocklist must be a list of words, got int"),
])
def test_the_blocklist_must_be_words_not_a_string(blocklist, message):
    with pytest.raises(ConfigError, match=message):
        Predictor.load(MODEL, blocklist=blocklist)


def test_a_blocklist_of_words_blocks_those_words_and_no_letters():
    p = Predictor.load(MODEL, blocklist=("the",))
    assert p.ranker.never[p.vocab.id_of("the")] and p.ranker.never.sum() == Predictor.load(MODEL).ranker.never.sum() + 1
    assert "the" not in [w for w, _ in p.suggest("see you at", 10)]


def test_a_session_refuses_a_history_that_is_not_one_at_once(predictor, tmp_path):
    for bad in ("x", {"format": "keyboard_lm.user_history"}, 3):
        with pytest.raises(ConfigError, match=f"history must be a UserHistory or None, got {type(bad).__name__}"):
            predictor.session(history=bad)
    s = predictor.session(history=UserHistory())
    with pytest.raises(ConfigError, match="history must be a UserHistory"):
        s.history = "x"
    assert isinstance(s.history, UserHistory)
    with pytest.raises(ConfigError, match="learn must be True or False, got 'no'"):
        predictor.session(learn="no")  # truthy: a password field would be learnt from
    with pytest.raises(ConfigError, match="personal must be the path of a personal-state file or None, got "
                                          "PersonalState"):
        predictor.session(personal=_personal())


# -- the commands ---------------------------------------------------------------------------------------
def test_predict_interactive_starts_from_the_context(predictor, monkeypatch, capsys):
    context = "see you at the"
    strip = [w for w, _ in predictor.suggest(context, 3)]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))  # piped input: one strip per line
    assert main(["predict", MODEL, context, "--interactive"]) == 0
    assert capsys.readouterr().out.splitlines() == [" | ".join([strip[1], strip[0], strip[2]])]
    assert main(["predict", MODEL, context, "--interactive", "--complete", "pa"]) == 2
    assert "--complete does not go with --interactive" in capsys.readouterr().err


def test_bench_text_file_that_is_not_utf8_is_one_line_with_the_byte_offset(tmp_path, capsys):
    path = tmp_path / "latin1.txt"
    path.write_bytes("see you at the café ".encode("utf-8") * 3 + "naïve".encode("latin-1"))
    assert main(["bench", MODEL, "--text-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"keyboard-lm: error: {path}: not UTF-8 text: byte 65 (0xef) invalid continuation byte\n"


def test_a_word_with_a_lone_surrogate_is_saved_and_read_back_exactly(tmp_path):
    h = _history(3)
    h.learn(["see", "\udc00oops"])  # text decoded with surrogateescape, passed through the API
    h.save(str(tmp_path / "me.history"))
    back = UserHistory.load(str(tmp_path / "me.history"))
    assert back.count("\udc00oops", "see") == h.count("\udc00oops", "see") > 0
    assert back.count("café") == h.count("café")
    with pytest.raises(ConfigError, match="personal word 0 '\\\\udc00' is not Unicode text"):
        _personal().add_words(["\udc00"], np.ones((1, 8), np.float32))
