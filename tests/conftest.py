"""Suite-wide hooks: say how the tests were ordered, so a failure in shuffled order can be replayed."""
from __future__ import annotations

import pytest


def _order(config: pytest.Config) -> str | None:
    if config.pluginmanager.hasplugin("randomly") and config.getoption("randomly_reorganize", False):
        seed = config.getoption("randomly_seed")
        return f"test order shuffled: --randomly-seed={seed} replays it, -p no:randomly runs in file order"
    if config.getoption("reverse", False):
        return "test order reversed (--reverse)"
    return None


# Groups that must stay on one worker under `pytest -n` (make test): each lab's clusters run one at a time (a second
# cluster of the same lab beside the first would double its JVMs on the machine's cores), and so do the Spark sessions,
# standalone master and worker. The Kafka and RocketMQ labs are groups of their own, so their clusters may overlap;
# each worker picks ports from its own slice of the range (`kafka_lab.port_range`).
def _serial_group(item: pytest.Item) -> str | None:
    if item.get_closest_marker("brokers"):
        return "rocketmq-lab" if "rocketmq" in item.path.name else "kafka-lab"
    if item.get_closest_marker("spark"):
        return "spark"
    return None


@pytest.hookimpl(tryfirst=True)   # before xdist's own hook reads the xdist_group markers into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = _serial_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    return _order(config)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    line = _order(config)
    if line and exitstatus != 0:
        terminalreporter.write_line(line)
