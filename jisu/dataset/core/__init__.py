"""The bottom layer of :mod:`jisu.dataset`: what every other layer shares.

The node contract (:mod:`.node`: :class:`~jisu.dataset.core.node.Dataset`, random access in
:mod:`.access`), its fluent methods (:mod:`.fluent`) and the implementations they reach above
``core`` (:mod:`.bindings`); the op contract (:mod:`.operation`) and PIL interop
(:mod:`.pil_images`); rows (:mod:`.rows`), keyed random streams (:mod:`.rng`), row orders
(:mod:`.order`), device-decode packets (:mod:`.packets`); CPU counts (:mod:`.cpus`), argument
checks (:mod:`.validation`), saved tunings (:mod:`.tuning`) and the executor contract
(:mod:`.executor`). Modules here import nothing from :mod:`jisu.dataset` above ``core`` but its
settings (:mod:`jisu.dataset.config`); the engine, ops, sources, vision and transforms build on
them (``tests/test_layout.py`` checks it).
"""
