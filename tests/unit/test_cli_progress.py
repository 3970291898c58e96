"""``kafka-ops execute`` progress: a redrawn bar on a terminal, plain lines in logs."""

from kafka_ops.cli.execute import ProgressBar
from kafka_ops.executor import ExecutionProgress


def _progress(phase: str, done: int, weight_done: int) -> ExecutionProgress:
    return ExecutionProgress(
        phase=phase, total=4, completed=done, in_flight=1, pending=4 - done - 1, aborted=0,
        dead=0, skipped=0, weight_total=4 * 2**30, weight_done=weight_done, elapsed=1.0,
        eta_seconds=30.0,
    )


def test_log_lines_are_rate_limited_but_every_phase_shows(capsys):
    bar = ProgressBar(log_interval=3600)
    bar.interactive = False
    bar.update(_progress("moving", 0, 0))
    bar.update(_progress("moving", 1, 2**30))  # within the interval: not printed
    bar.update(_progress("electing", 3, 4 * 2**30))
    bar.close()
    assert capsys.readouterr().err.splitlines() == [
        "moving: 0% done 0/4 moving 1 pending 3 ETA 30 s",
        "electing: 100% done 3/4 moving 1 pending 0 ETA 30 s",
    ]


def test_terminal_gets_a_tqdm_bar_in_bytes(capsys):
    bar = ProgressBar()
    bar.interactive = True
    bar.update(_progress("moving", 1, 2**30))
    bar.close()
    err = capsys.readouterr().err
    assert "moving:  25%|" in err and "1.07G/4.29G" in err and "done 1/4" in err
