"""Pipeline sources: generators, random-access objects, NumPy slices, torch datasets."""
