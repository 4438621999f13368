"""Pipeline ops: one module per op (map, batch, shuffle, repeat, shard, ...)."""
