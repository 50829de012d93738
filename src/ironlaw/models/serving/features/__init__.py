"""What people deploy around a serving estimate (``ironlaw.models.serving.online``), one module per feature:

    speculative   draft/MTP/EAGLE speculation: verify over K + 1 tokens, E[tokens] = (1 − A^(K+1)) / (1 − A)
    prefix        prefix caching: the cached share of a prompt costs no projection/MLP work
    disaggregate  prefill and decode on separate pools, the prompt's KV cache sent between them
    goodput       the highest concurrency meeting TTFT/ITL targets, and the concurrency frontier
    energy        joules, dollars and grams of CO₂ per output token of any of them (ironlaw.law.power)

Each takes a ``serving.ServeEstimate`` (and the options it was made with) and returns a plain dict with
its ``schema``; the numbers rest on ``law.predict`` of the graphs it builds.
"""
