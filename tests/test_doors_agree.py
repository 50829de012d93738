"""One answer through several doors (text, JSON, HTML, the library; serve against its own frontier; a training
step's parts) carries the same numbers and says what each is. Each pinned by the test that failed before its fix."""
import pytest

def test_a_tp_overlap_that_hides_every_collective_leaves_zero_seconds_not_round_off():
    """With --tp-comm-overlap hiding every TP collective the step's table printed 'of which TP/EP collectives
    4.44e-07 ns' (4.4e-16 s, the difference of two equal sums) for the layout `search` ranks first."""
    import ironlaw
    d = ironlaw.analyze("llama3-8b", on="h100", phase="train", gpus=2, tp=2, sequence_parallel=True,
                        tp_comm_overlap=True, global_batch=1, seq=4096).to_dict()
    assert d["breakdown"]["tp_ep_network_s"] == 0.0
    d = ironlaw.analyze("llama3-8b", on="h100", phase="train", gpus=2, tp=2, global_batch=1, seq=4096).to_dict()
    assert d["breakdown"]["tp_ep_network_s"] > 1e-6            # without the overlap the collectives stay
