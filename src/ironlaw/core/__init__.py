"""Layer 0, the basics every other layer uses: the op graph, units, errors, FLOP counts, GEMM shapes, files,
progress bars and the JSON schemas. Imports nothing from ironlaw above it."""
