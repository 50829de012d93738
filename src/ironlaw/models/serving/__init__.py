"""Serving: the online estimate at a concurrency (``online``), the engine's step (``step``, ``engine``), the
sharded step (``parallel``), offline max-throughput (``throughput``) and the serving features (``features``)."""
