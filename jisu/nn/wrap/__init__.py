"""MindSpore's wrapper cells for scripts that build their own step: WithLossCell,
TrainOneStepCell, WithEvalCell."""

__all__: list[str] = []
