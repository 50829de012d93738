"""The run-cost option group (``cli.options.with_run_cost``): one definition, the same flags on each verb."""
import typer
from typer.testing import CliRunner

from ironlaw.cli.options import RunCost, with_run_cost


def test_a_command_gets_the_six_flags_as_one_run_cost():
    app, got = typer.Typer(), {}

    @app.command()
    @with_run_cost
    def verb(name: str, cost: RunCost = RunCost(), top: int = typer.Option(3, "--top")):
        got.update(name=name, cost=cost, top=top)

    r = CliRunner().invoke(app, ["x", "--price-per-gpu-hour", "2.5", "--train-tokens", "15T", "--checkpoint-s", "30",
                                 "--top", "7"])
    assert r.exit_code == 0, r.output
    assert got == {"name": "x", "top": 7, "cost": RunCost(price=2.5, train_tokens="15T", checkpoint_s=30.0)}
    assert got["cost"].api_kwargs() == {"price_per_gpu_hour": 2.5, "grid_gco2_per_kwh": None, "train_tokens": "15T",
                                        "mtbf_gpu_hours": None, "checkpoint_s": 30.0, "restart_s": None}
    assert CliRunner().invoke(app, ["x", "--price", "2"]).exit_code == 2


def test_analyze_and_search_list_the_same_run_cost_flags():
    from ironlaw.cli.common import app
    import ironlaw.cli.analyze  # noqa: F401  (registers the verbs)
    import ironlaw.cli.search  # noqa: F401
    flags = ("--price-per-gpu-hour", "--grid-gco2-per-kwh", "--train-tokens", "--mtbf-gpu-hours", "--checkpoint-s",
             "--restart-s")
    for verb in ("analyze", "search"):
        out = CliRunner().invoke(app, [verb, "--help"], terminal_width=200).output
        assert all(f in out for f in flags), verb


def test_the_option_groups_share_one_grouping():
    """``with_run_cost`` was a copy of ``groups.grouped``'s body: it is now ``grouped`` over ``RUN_COST``."""
    import inspect
    from ironlaw.cli import groups, options
    assert "grouped(" in inspect.getsource(options.with_run_cost)
    assert "inspect.Parameter" not in inspect.getsource(options)
    assert groups.grouped.__module__ == "ironlaw.cli.groups"


def test_format_is_one_option_definition():
    """`--format text | json | md` was written out in a dozen commands: each takes ``options.Format`` (sweep, which
    writes CSV too, and report, which writes HTML, keep their own)."""
    from pathlib import Path
    import ironlaw.cli
    cli = Path(ironlaw.cli.__file__).parent
    typed = {p.name for p in cli.glob("*.py") if '"--format", help="text | json | md"' in p.read_text()}
    assert typed == {"options.py"}, typed
    users = {p.name for p in cli.glob("*.py") if "fmt: Format" in p.read_text()}
    assert {"analyze.py", "serve.py", "search.py", "hardware.py", "workloads.py", "validate.py"} <= users
