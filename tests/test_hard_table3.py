"""Hard et al.'s comparison like for like: the server CIFG's and the federated CIFG's arguments train as said."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.hard_table3 import hard_table3  # noqa: E402

pytestmark = pytest.mark.bench


def test_server_and_federated_rows_share_the_regularization_and_drop_the_extras(tmp_path):
    from keyboard_lm.cli import main

    toy = ["--format", "default", "--units", "16", "--embedding-dim", "8", "--vocab-size", "200"]
    server = hard_table3.train_args("mail", "server", 1, str(tmp_path / "s"), 1.0, epochs=1)
    federated = hard_table3.train_args("mail", "federated", 1, str(tmp_path / "f"))
    for args in (server, federated):
        assert "--init-from" not in args  # Hard et al. train both from random weights
    cut = server.index("--out")
    assert main(["train", *server[cut:], *toy]) == 0
    cut = federated.index("--out")
    assert main(["train", *federated[cut:], *toy, "--rounds", "1", "--max-batches", "2"]) == 0
    hp = json.loads((tmp_path / "s" / "run.json").read_text())["hyperparameters"]
    assert (hp["optimizer"], hp["learning_rate"], hp["batch_size"], hp["dropout"]) == ("sgd", 1.0, 10, 0.2)
    assert (hp["weight_drop"], hp["ngram_teacher"], hp["weight_average"]) == (0.0, 0.0, 0.0)
    fed = json.loads((tmp_path / "f" / "run.json").read_text())["federated"]
    assert (fed["dropout"], fed["weight_average"], fed["server_optimizer"]) == (0.2, 0.0, "nesterov")
    # stopped with a checkpoint: resumed, not restarted (the server run from its last epoch)
    assert hard_table3.train_args("mail", "federated", 1, str(tmp_path / "f"))[-1] == "--resume"
    assert hard_table3.train_args("mail", "server", 1, str(tmp_path / "s"), 1.0)[-1] == "--resume"


def test_the_server_cifg_trains_10_epochs_of_shakespeare_and_4_of_the_mail_unless_told(tmp_path):
    def epochs(corpus, **kw):
        args = hard_table3.train_args(corpus, "server", 0, str(tmp_path / corpus), 1.0, **kw)
        return int(args[args.index("--epochs") + 1])

    # no more examples than the federated CIFG sees: the mail holds 4.3 times Tiny Shakespeare's text
    assert (epochs("shakespeare"), epochs("mail"), epochs("mail", epochs=5)) == (10, 4, 5)


def test_a_server_run_is_a_result_once_it_trained_its_epochs_or_validation_stopped_it():
    from benchmarks.common.runs import completed as _completed

    run = {"trainer": "centralized", "final_metrics": {"loss": 5.0}, "hyperparameters": {"epochs": 10}}
    assert not _completed({**run, "epochs_done": 3})  # stopped by the session: resumed
    assert _completed({**run, "epochs_done": 3, "stopped_early": True})  # --patience ended it
    assert _completed({**run, "epochs_done": 10})


def test_a_diverged_run_is_a_result_not_a_run_to_retrain(tmp_path):
    out = str(tmp_path / "federated_seed0")
    assert not hard_table3._result(out)
    os.makedirs(out)
    with open(out + ".log", "w") as f:
        f.write("keyboard-lm: error: training diverged at round 40 (train loss 5000.0, limit 27.6)\n")
    assert not hard_table3._result(out)  # nothing kept yet: trained again
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump({"best": {"round": 25}, "federated": {"rounds": 350}, "rounds_done": 39, "final_metrics": {}}, f)
    assert hard_table3._result(out)


def test_the_server_rate_is_the_one_whose_kept_epoch_validates_best(tmp_path):
    """By the kept epoch's validation recall@3: from run.json's `best`, or, for runs made before the
    centralized trainer wrote it, from the kept epoch's row of metrics.csv."""
    work = str(tmp_path)
    for lr, val, with_best in ((0.5, 0.16, True), (1.0, 0.18, False), (2.0, 0.17, True)):
        out = hard_table3.run_dir(work, "mail", "server", 0, lr)
        os.makedirs(out)
        info = {"trainer": "centralized", "hyperparameters": {"epochs": 2}, "epochs_done": 2, "best_epoch": 1,
                "final_metrics": {"loss": 5.0}}
        if with_best:
            info["best"] = {"epoch": 1, "val_recall_at_3": val, "val_loss": 5.0}
        with open(os.path.join(out, "run.json"), "w") as f:
            json.dump(info, f)
        with open(os.path.join(out, "metrics.csv"), "w") as f:
            f.write("epoch,perplexity,val_loss,val_recall_at_3\n")
            f.write(f"1,300,5.0,{val}\n2,290,5.1,{val - 0.01}\n")
    assert hard_table3.server_lr(work, "mail") == 1.0


def test_a_run_stopped_before_its_first_checkpoint_starts_again(tmp_path):
    """An empty checkpoints/ (the run was stopped while its first round or epoch trained) is not a run to
    resume: `train --resume` would refuse it and end the benchmark's lane."""
    from benchmarks.common import run_records as _records

    out = str(tmp_path / "server_lr1_seed0")
    os.makedirs(os.path.join(out, "checkpoints"))
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump({"trainer": "federated"}, f)
    assert not _records.resumable(out)
    assert hard_table3.train_args("mail", "server", 0, out, 1.0)[-1] != "--resume"
    open(os.path.join(out, "checkpoints", "program_state_1"), "w").close()
    assert _records.resumable(out)


def _finished_server_run(out, val):
    os.makedirs(out)
    info = {"trainer": "centralized", "hyperparameters": {"epochs": 2}, "epochs_done": 2, "best_epoch": 1,
            "final_metrics": {"loss": 5.0}, "best": {"epoch": 1, "val_recall_at_3": val, "val_loss": 5.0}}
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(info, f)
    with open(os.path.join(out, "metrics.csv"), "w") as f:
        f.write(f"epoch,perplexity,val_loss,val_recall_at_3\n1,300,5.0,{val}\n2,290,5.1,{val}\n")


def test_rows_split_between_processes_and_server_seeds_wait_for_the_grid(tmp_path):
    """`--rows`: one process trains the server rows (the rate grid, then its seeds at the chosen rate), another
    the federated rows; neither schedules a run of the other's."""
    work = str(tmp_path)
    both = hard_table3.pending(work, "mail")
    assert both[:3] == [("server", 0, lr) for lr in hard_table3.SERVER_LRS]
    assert both[3:] == [("federated", s, None) for s in hard_table3.SEEDS]  # server seeds: no rate yet
    assert hard_table3.pending(work, "mail", ["federated"]) == both[3:]
    _finished_server_run(hard_table3.run_dir(work, "mail", "server", 0, 0.5), 0.16)
    _finished_server_run(hard_table3.run_dir(work, "mail", "server", 0, 1.0), 0.18)
    assert hard_table3.pending(work, "mail", ["server"]) == [("server", 0, 2.0)]
    _finished_server_run(hard_table3.run_dir(work, "mail", "server", 0, 2.0), 0.17)
    assert hard_table3.pending(work, "mail", ["server"]) == [("server", 1, 1.0), ("server", 2, 1.0)]
    assert hard_table3.pending(work, "mail") == [("federated", 0, None), ("federated", 1, None), ("server", 1, 1.0),
                                                 ("federated", 2, None), ("server", 2, 1.0)]
    assert hard_table3.pending(work, "shakespeare", ["federated"]) == [("federated", s, None)
                                                                       for s in hard_table3.SEEDS]
