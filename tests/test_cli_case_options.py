"""The workload case's option group (``cli.case.with_case``): one definition of --batch, --seq, --phase, --dtype
and --serial/--overlap for analyze, compare and report, each handed to the front door under its own name."""
import typer
from typer.testing import CliRunner

from ironlaw.cli.case import Case, with_case

FLAGS = ("--batch", "--seq", "--phase", "--dtype", "--serial", "--overlap")


def test_a_command_gets_the_five_options_as_one_case_in_their_place():
    app, got = typer.Typer(), {}

    @app.command()
    @with_case
    def verb(name: str, case: Case = Case(), top: int = typer.Option(3, "--top")):
        got.update(name=name, case=case, top=top)

    r = CliRunner().invoke(app, ["x", "--batch", "4", "--seq", "512", "--phase", "decode", "--dtype", "fp8",
                                 "--serial", "--top", "7"])
    assert r.exit_code == 0, r.output
    assert got == {"name": "x", "top": 7, "case": Case(batch=4, seq=512, phase="decode", dtype="fp8", serial=True)}
    assert got["case"].api_kwargs() == {"batch": 4, "seq": 512, "phase": "decode", "dtype": "fp8", "serial": True}
    assert CliRunner().invoke(app, ["x"]).exit_code == 0 and got["case"] == Case()      # the defaults as before
    out = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    assert [out.index(f) for f in FLAGS] == sorted(out.index(f) for f in FLAGS) < [out.index("--top")] * len(FLAGS)
    assert CliRunner().invoke(app, ["x", "--batch", "two"]).exit_code == 2


def test_analyze_compare_and_report_hand_the_case_to_the_front_door(monkeypatch, tmp_path):
    from ironlaw import api
    from ironlaw.cli.common import app
    import ironlaw.cli.analyze  # noqa: F401  (registers the verbs)
    import ironlaw.cli.compare  # noqa: F401
    import ironlaw.cli.report  # noqa: F401
    seen = {}

    def stop(verb):
        def front_door(*args, **kw):
            seen[verb] = {k: kw.get(k) for k in ("batch", "seq", "phase", "dtype", "serial")}
            raise SystemExit(0)
        return front_door
    for verb in ("analyze", "compare", "report"):
        monkeypatch.setattr(api, verb, stop(verb))
    case = ["--batch", "3", "--seq", "77", "--phase", "prefill", "--dtype", "bf16", "--overlap"]
    for verb, args in (("analyze", []), ("compare", ["-w", "batch=64"]), ("report", ["--html", str(tmp_path / "r.html")])):
        CliRunner().invoke(app, [verb, "llama3-8b", *args, *case])
        assert seen[verb] == {"batch": 3, "seq": 77, "phase": "prefill", "dtype": "bf16", "serial": False}, verb
        out = CliRunner().invoke(app, [verb, "--help"], terminal_width=200).output
        assert all(f in out for f in FLAGS), verb
