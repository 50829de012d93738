"""The tests' in-process CLI runner (``conftest.run_cli``) answers as `python -m ironlaw` does in a process of its
own (``conftest.run_process``): the same exit status, stdout and stderr, and it leaves the environment, the
working directory and argv as it found them."""
import os
import sys

import pytest

from conftest import run_cli, run_process


@pytest.mark.parametrize("argv", [
    ["analyze", "gemm:4096,4096,4096", "--on", "h100", "--format", "json"],      # an answer
    ["analyze", "gemm:64,64,64", "--on", "a100", "--dtype", "fp8"],              # refused: exit 2, one line
    ["hardware", "show", "h100", "--frobnicate"],                                # click's usage error
])
def test_in_process_and_own_process_agree(argv, tmp_path):
    here = run_cli(*argv, cwd=str(tmp_path))
    own = run_process(*argv, cwd=str(tmp_path))
    assert (here.rc, here.out, here.err) == (own.rc, own.out, own.err)


def test_in_process_run_restores_what_it_changed(tmp_path):
    env, cwd, argv = dict(os.environ), os.getcwd(), list(sys.argv)
    r = run_cli("analyze", "llama3-8b", "--on", "h100", "--phase", "decode", cwd=str(tmp_path),
                env={"IRONLAW_HOME": str(tmp_path)})
    assert r.rc == 0, r.err
    assert (dict(os.environ), os.getcwd(), sys.argv) == (env, cwd, argv)
