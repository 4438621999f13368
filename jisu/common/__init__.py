"""MindSpore's ``mindspore.common`` names: initializers (``jisu.common.initializer``)."""
