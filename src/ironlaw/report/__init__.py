"""Renderers of an Estimate: text (rich), Markdown; JSON is ``Estimate.to_dict``."""


def _console():
    from rich.console import Console
    return Console(highlight=False, emoji=False)
