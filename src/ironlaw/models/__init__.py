"""Layer 3, the workloads and what is done to them: built-in and captured graphs, what-ifs, low precision,
parallel training plans, serving and the search over layouts. Imports the law and below."""
