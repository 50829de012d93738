"""Layer 1, the machine: hardware datasheets (the catalog), their calibration tables, measured profiles, the
cache rules, capacity placement and the network (topology, collectives). Imports only ``core``."""
