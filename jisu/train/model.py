"""``Model``: MindSpore's high-level training API on PyTorch modules.

``Model(network, loss_fn, optimizer, metrics, amp_level=...)`` then ``train``, ``eval``,
``predict``, ``fit``. The train step comes from :func:`jisu.amp.build_train_network` (mixed
precision, device-side loss scaling), wrapped by :func:`~jisu.train.steps.wrap_train_step`
(data parallel under ``torchrun``; GRAPH_MODE compiles its forward and backward with
``torch.compile``). Sink mode (``dataset_sink_mode=True``) feeds batches from a device-side
queue and runs a whole sink (an epoch, or ``sink_size`` steps) without any host
synchronisation; the step losses are read once per sink and the step callbacks are replayed
then, so every step is still seen (:mod:`jisu.train.loop`: one loop for both modes).
``state_dict()`` / ``load_state_dict()`` are the training state in memory (nested, torch
names); ``jisu.save_checkpoint(model, path)`` / ``jisu.load_checkpoint(path, model=model)``
write and read it as a MindSpore ``.ckpt`` (:mod:`jisu.train.ckpt_state`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .. import amp, distributed
from ..amp.levels import LEVELS
from ..context import ParallelMode as ParallelMode  # mindspore.train.model.ParallelMode
from ..context import context_device, get_auto_parallel_context
from ..nn.cell import train_mode
from .amp_choice import FASTEST, LevelChoice, choose_for, is_fastest, measured_setups
from .callbacks.base import CallbackList, RunContext
from .callbacks.progress_bar import ProgressBar
from .capture import acts_per_step, changes_rates_per_step, sink_step
from .cell_steps import CellStep, CustomEvalStep, check_eval_indexes, is_train_cell
from .checkpoint import restore_rng_state
from .ckpt_resume import load_model_state, model_state, resume_at
from .feeder import BatchSource, as_tensors, shard_by_rank, to_device
from .first_step import FirstStep, FirstStepCheck
from .loop import EpochLoop, EvalLoop, open_feeder
from .memory_format import CHANNELS_LAST, check_memory_format, to_memory_format
from .metrics import Loss, get_metrics
from .replay_guard import ReplayGuard
from .schedules import LRSchedulerRunner, rates_on_device
from .state import TrainState
from .steps import CompiledStep, EvalStep, wrap_train_step


def _check_count(op: str, name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"Model.{op}: {name} must be an int >= {low}. Received {name}={value!r}")
    return value


class Model:
    """Train, evaluate and predict with a PyTorch network (MindSpore's ``Model``).

    Args:
        network: the ``nn.Module``; with ``loss_fn`` None it must return the loss itself.
        loss_fn: ``loss_fn(network_output, label)``.
        optimizer: a torch optimizer over the network's parameters (None: eval/predict only).
        metrics: names (``{"acc", "loss"}``), or a dict of name -> metric, for ``eval``.
        eval_network: the module used by ``eval`` (default: the network).
        amp_level: "O0", "O1", "O2", "O3", "auto" (see :mod:`jisu.amp`), or "fastest": the
            level measured fastest here at the first ``train`` (:mod:`jisu.train.amp_choice`;
            O0 until then).
        loss_scale_manager, keep_batchnorm_fp32: passed to ``build_train_network``.
        max_grad_norm: clip the gradients to this total 2-norm before each update.
        lr_scheduler: a ``torch.optim.lr_scheduler`` scheduler of ``optimizer``, stepped after
            every train step (sink mode included), or a dict ``{"scheduler": s, "interval":
            "step" | "epoch", "frequency": n, "monitor": name}`` (a ``ReduceLROnPlateau``
            steps per epoch on ``monitor``); see :mod:`jisu.train.schedules`. Its state is in
            :meth:`state_dict`.
        eval_indexes: with ``eval_network``, the positions of the loss, prediction and label in
            its outputs (see :mod:`jisu.train.cell_steps`).
        boost_level, boost_config_dict: MindSpore's training accelerations; accepted, and
            ``boost_level`` must be "O0" (none is provided).
        memory_format: the layout of the network's 4-D weights: "contiguous" (as it is,
            NCHW), "channels_last" (NHWC, converted in place), or "fastest": measured at the
            first ``train``, with the level when ``amp_level`` is "fastest" too
            (:mod:`jisu.train.memory_format`). jisu's own; MindSpore has no such choice.

    With neither ``loss_fn`` nor ``optimizer``, a ``network`` holding its optimizer is a train
    cell that updates the parameters itself (``Model(TrainOneStepCell(...))``): a step is
    ``network(*batch)``.
    Batches are tuples whose last element is the label: ``network(*batch[:-1])``.
    """

    def __init__(
        self,
        network: nn.Module,
        loss_fn: Callable[..., torch.Tensor] | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        metrics: Any = None,
        eval_network: nn.Module | None = None,
        amp_level: str = "O0",
        loss_scale_manager: amp.LossScaleManager | None = None,
        keep_batchnorm_fp32: bool | None = None,
        max_grad_norm: float | None = None,
        lr_scheduler: Any = None,
        eval_indexes: list[int] | None = None,
        boost_level: str = "O0",
        boost_config_dict: dict | None = None,
        memory_format: str = "contiguous",
    ) -> None:
        if not isinstance(network, nn.Module):
            raise TypeError(f"Model: network must be a torch.nn.Module. Received {network!r}")
        if distributed.world_size_from_env() > 1:
            distributed.init()
        device = distributed.local_device() or context_device()
        if device is not None:
            network.to(device)
        if distributed.is_initialized() and get_auto_parallel_context("parameter_broadcast"):
            distributed.broadcast_parameters(network)  # every rank starts from rank 0's
        self.device = device or next((p.device for p in network.parameters()), torch.device("cpu"))
        self.network = network
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.amp_level = amp_level
        self.memory_format = check_memory_format(memory_format, "Model")
        if memory_format == CHANNELS_LAST:
            to_memory_format(network, CHANNELS_LAST)
        #: the measurement of a "fastest" ``amp_level`` or ``memory_format``, made by the
        #: first ``train`` (else None)
        self.amp_choice: LevelChoice | None = None
        self._metrics = metrics
        get_metrics(metrics)  # bad names fail here, not at the first eval
        self._train_step = None
        self._predict_network = network
        self.loss_scale_manager: amp.LossScaleManager | None = None
        self._step_options = {
            "loss_scale_manager": loss_scale_manager,
            "keep_batchnorm_fp32": keep_batchnorm_fp32,
            "max_grad_norm": max_grad_norm,
        }
        if not is_fastest(amp_level) and amp_level not in LEVELS:
            raise ValueError(
                f"Model: amp_level must be one of {(*LEVELS, FASTEST)}. Received {amp_level!r}"
            )
        for name, value in (("amp_level", amp_level), ("memory_format", memory_format)):
            if is_fastest(value) and optimizer is None:
                raise ValueError(
                    f"Model: {name}='fastest' needs an optimizer: it is chosen by timing train "
                    "steps"
                )
        if optimizer is not None:  # "fastest" trains at O0 until the first train chooses
            self._build_train_step("O0" if is_fastest(amp_level) else amp_level)
        elif amp_level != "O0":
            self._predict_network = amp.auto_mixed_precision(network, amp_level)
        if optimizer is None and loss_fn is None and is_train_cell(network):
            self._train_step = CellStep(self._predict_network)  # Model(TrainOneStepCell(...))
        self._lr_schedule = (
            LRSchedulerRunner(lr_scheduler, optimizer) if lr_scheduler is not None else None
        )
        self.eval_network = eval_network or self._predict_network
        self._eval_indexes = check_eval_indexes(eval_indexes)
        self._custom_eval = eval_network is not None
        if boost_level not in ("O0", None):
            raise ValueError(f"Model: boost_level {boost_level!r} is not provided; use 'O0'")
        self._resume: dict[str, Any] | None = None  # a loaded checkpoint's position
        self._checkpoint_path: str | None = None  # the file load_checkpoint(model=) loaded
        self._state: TrainState | None = None  # the last train run's, live during it

    def _build_train_step(self, level: str) -> None:
        step = amp.build_train_network(
            self.network, self.optimizer, self.loss_fn, level=level, **self._step_options
        )
        self._step_core = step  # unwrapped: a new layout wraps it again (_choose_setup)
        self._train_step = wrap_train_step(step, self.loss_fn, self.device)
        self._predict_network = step.network
        self.loss_scale_manager = step.loss_scale_manager

    def _choose_setup(self, train_dataset: Any) -> None:
        """A "fastest" ``amp_level`` or ``memory_format``: time the candidates on the data
        set's first batches and train at the chosen level and layout
        (:mod:`jisu.train.amp_choice`). Under ``torchrun`` rank 0 measures and every rank
        takes its choice (the ranks must run the same precision)."""
        from ..amp.cpu_bf16 import SoftwareBf16Warning

        levels, formats = measured_setups(self.amp_level, self.memory_format, self.network)
        if len(levels) * len(formats) == 1:  # a layout asked for a network without 4-D weights
            self.memory_format = formats[0]
            return
        rank0 = distributed.get_rank() == 0
        choice = choose_for(self, train_dataset, levels, formats=formats) if rank0 else None
        if distributed.get_group_size() > 1:
            shared = [choice]
            torch.distributed.broadcast_object_list(shared, src=0)
            choice = shared[0]
        rebuild = is_fastest(self.amp_level) and choice.level != "O0"
        self.amp_choice, self.amp_level = choice, choice.level
        self.memory_format = choice.memory_format
        to_memory_format(self.network, choice.memory_format)
        if rebuild:
            with warnings.catch_warnings():  # measured faster here, whatever the figures say
                warnings.simplefilter("ignore", SoftwareBf16Warning)
                self._build_train_step(choice.level)
        elif len(formats) > 1:  # wrapped again: DistributedDataParallel lays its buckets out
            self._train_step = wrap_train_step(self._step_core, self.loss_fn, self.device)
        if not self._custom_eval:
            self.eval_network = self._predict_network

    @property
    def lr_scheduler(self) -> Any:
        """The torch scheduler given as ``lr_scheduler`` (None without one)."""
        return None if self._lr_schedule is None else self._lr_schedule.scheduler

    @property
    def train_network(self) -> Any:
        """The train step (a callable: ``train_network(*batch)`` -> loss)."""
        return self._train_step

    @property
    def predict_network(self) -> Any:
        """The network ``predict`` runs (MindSpore's; lstm_crf's eval callback calls it)."""
        return self._predict_network

    # ------------------------------------------------------------------ training
    def train(
        self,
        epoch: int,
        train_dataset: Any,
        callbacks: Any = None,
        dataset_sink_mode: bool = False,
        sink_size: int = -1,
        initial_epoch: int | None = None,
    ) -> None:
        """Train for epochs ``initial_epoch`` .. ``epoch - 1``.

        With ``sink_size > 0`` (sink mode) an epoch is ``sink_size`` steps and the dataset is
        traversed endlessly (MindSpore's rule); with -1 an epoch is one pass over the data.
        ``initial_epoch`` None (the default) means 0, or, after ``load_checkpoint(path,
        model=self)`` (or ``load_state_dict`` of a state with a position), the loaded
        position: the run continues on the batch after the checkpoint's. An int is checked
        against a loaded position (MindSpore's default is 0).
        """
        self._fit(epoch, train_dataset, callbacks, dataset_sink_mode, sink_size, initial_epoch)

    def fit(
        self,
        epoch: int,
        train_dataset: Any,
        valid_dataset: Any = None,
        valid_frequency: int = 1,
        callbacks: Any = None,
        dataset_sink_mode: bool = False,
        valid_dataset_sink_mode: bool = False,
        sink_size: int = -1,
        initial_epoch: int | None = None,
    ) -> None:
        """``train`` with an evaluation on ``valid_dataset`` every ``valid_frequency`` epochs;
        the results are in ``cb_params.metrics`` for the epoch-end callbacks (LossMonitor
        prints them; EarlyStopping/ReduceLROnPlateau monitor them). Evaluation runs without
        sink mode (``valid_dataset_sink_mode`` is accepted for compatibility)."""
        _check_count("fit", "valid_frequency", valid_frequency, 1)
        self._fit(
            epoch,
            train_dataset,
            callbacks,
            dataset_sink_mode,
            sink_size,
            initial_epoch,
            valid=(valid_dataset, valid_frequency) if valid_dataset is not None else None,
        )

    def _check_train(
        self, epoch: int, sink_mode: bool, sink_size: int, initial_epoch: int | None
    ) -> None:
        if self._train_step is None:
            raise ValueError("Model.train: the Model has no optimizer (nor a train cell)")
        _check_count("train", "epoch", epoch, 1)
        # None: 0, or the loaded position (checked when the epoch's steps are known)
        if initial_epoch is not None:
            _check_count("train", "initial_epoch", initial_epoch, 0)
            if initial_epoch >= epoch:
                raise ValueError(
                    f"Model.train: initial_epoch ({initial_epoch}) must be less than epoch "
                    f"({epoch})"
                )
        if (
            isinstance(sink_size, bool)
            or not isinstance(sink_size, int)
            or not (sink_size == -1 or sink_size > 0)
        ):
            raise ValueError(f"Model.train: sink_size must be -1 or > 0. Received {sink_size!r}")

    def _fit(
        self,
        epoch: int,
        train_dataset: Any,
        callbacks: Any,
        sink_mode: bool,
        sink_size: int,
        initial_epoch: int | None,
        valid: tuple[Any, int] | None = None,
    ) -> None:
        self._check_train(epoch, sink_mode, sink_size, initial_epoch)
        train_dataset = shard_by_rank(train_dataset)
        if is_fastest(self.amp_level) or is_fastest(self.memory_format):
            self._choose_setup(train_dataset)
        resume = resume_pending = self._resume
        self._resume = None
        source = BatchSource(train_dataset, resume["dataset_state"] if resume else None)
        steps = sink_size if sink_mode and sink_size > 0 else source.size
        try:
            if steps == 0:
                raise ValueError("Model.train: the dataset has no batch per epoch")
            if resume is not None:
                resume, initial_epoch = resume_at(resume, steps, initial_epoch, epoch)
            initial_epoch = initial_epoch or 0
        except BaseException:
            source.close()
            self._resume = self._resume or resume_pending  # a refused call keeps it pending
            raise
        callbacks = list(CallbackList(callbacks).callbacks)
        if sys.stderr.isatty() and not any(isinstance(c, ProgressBar) for c in callbacks):
            callbacks.append(ProgressBar())
        cbs = CallbackList(callbacks)
        done_in_epoch = resume["step_in_epoch"] if resume else 0
        state = self._state = TrainState(
            model=self,
            network=self.network,
            train_network=self._train_step,
            optimizer=self.optimizer,
            loss_fn=self.loss_fn,
            loss_scale_manager=self.loss_scale_manager,
            train_dataset=train_dataset,
            device=self.device,
            amp_level=self.amp_level,
            graph_mode=isinstance(self._train_step, CompiledStep),
            dataset_sink_mode=sink_mode,
            sink_size=sink_size,
            epoch_num=epoch,
            batch_num=steps,
            cur_epoch_num=initial_epoch,
            cur_step_num=resume["cur_step_num"] if resume else initial_epoch * (steps or 0),
            epoch_ended=done_in_epoch == 0,  # no epoch in progress yet
            dataset_state=source.state(),
        )
        state.dispatched_step_num = state.cur_step_num
        if isinstance(self._train_step, CompiledStep) and steps is not None:
            self._train_step.plan_steps((epoch - initial_epoch) * steps - done_in_epoch)
        rates_on_device(self.optimizer, self.device)  # a capturable step reads the current rate
        train_step = self._train_step
        if sink_mode:  # on CUDA, captured as a CUDA graph when nothing rules it out
            modules = [self.network, *[m for m in [self.loss_fn] if isinstance(m, nn.Module)]]
            train_step, state.step_capture = sink_step(
                train_step,
                self.device,
                modules,
                self.optimizer,
                self.loss_scale_manager,
                per_step_schedule=changes_rates_per_step(self._lr_schedule, callbacks),
                watch_every_step=acts_per_step(callbacks),
            )
        # sink mode replays step callbacks after the sink: those that act there are reported
        guard = ReplayGuard(callbacks, state, steps) if sink_mode else None
        run = RunContext(state)
        endless = source.endless() if sink_mode and sink_size > 0 else None
        # the first step's failure says which columns went where (no cost after it)
        network = getattr(self._train_step, "network", self.network)
        first_step = FirstStepCheck(
            FirstStep(
                "Model.train", source.column_names, network, self.loss_fn, self.loss_fn is None
            )
        )
        train_mode(self.network)
        try:
            cbs.on_train_begin(run)
            if resume is not None and resume["rng_state"] is not None:
                # after on_train_begin, right before the first resumed step: where the
                # uninterrupted run stood when the checkpoint was written
                restore_rng_state(resume["rng_state"])
            for e in range(initial_epoch, epoch):
                state.cur_epoch_num = e + 1
                state.step_in_epoch = done_in_epoch
                state.epoch_ended = False
                state.metrics = None
                # one pass ends with the data's epoch; an endless source stops after `steps`
                limit = steps - done_in_epoch if endless is not None else None
                done_in_epoch = 0
                cbs.on_train_epoch_begin(run)
                batches = endless if endless is not None else source.one_pass()
                feeder = open_feeder(batches, source, self.device, limit, sink_mode, train=True)
                loop = EpochLoop(
                    train_step, feeder, state, run, cbs, sink_mode, self._lr_schedule, guard
                )
                first_step.watch(loop)
                complete = loop.run(limit)
                if valid is not None and (e + 1) % valid[1] == 0:
                    state.metrics = self.eval(valid[0])
                    train_mode(self.network)
                # a stopped epoch's schedule step is left to the run that completes it
                if self._lr_schedule is not None and complete:
                    self._lr_schedule.after_epoch(state)
                cbs.on_train_epoch_end(run)
                if run.get_stop_requested():
                    break
            cbs.on_train_end(run)
        except BaseException:
            cbs.on_train_exception(run)  # e.g. the progress bar closes before the traceback
            raise
        finally:
            source.close()

    # ------------------------------------------------------------------ evaluation
    def eval(
        self, valid_dataset: Any, callbacks: Any = None, dataset_sink_mode: bool = False
    ) -> dict:
        """Metrics over one pass of ``valid_dataset``: ``{name: value}``. Evaluation runs
        without sink mode (``dataset_sink_mode`` is accepted for MindSpore compatibility):
        metrics need every batch's output on the host anyway."""
        metrics = get_metrics(self._metrics)
        if not metrics:
            raise ValueError(
                "Model.eval: the Model has no metrics; pass metrics={'acc'} or similar"
            )
        losses = any(isinstance(m, Loss) for m in metrics.values())
        if losses and self.loss_fn is None and self._eval_indexes is None:
            raise ValueError("Model.eval: the 'loss' metric needs loss_fn")
        for metric in metrics.values():
            metric.clear()
        cbs = CallbackList(callbacks)
        source = BatchSource(valid_dataset, op="Model.eval")
        state = TrainState(
            model=self, network=self.network, eval_network=self.eval_network,
            loss_fn=self.loss_fn, valid_dataset=valid_dataset, device=self.device,
            amp_level=self.amp_level, mode="eval", batch_num=source.size,
        )  # fmt: skip
        run = RunContext(state)
        # the first step's failure says which columns went where, and why
        first_step = FirstStepCheck(
            FirstStep(
                "Model.eval",
                source.column_names,
                self.eval_network,
                self.loss_fn if losses else None,
                scalar_loss=False,
            )
        )
        was_training = self.network.training
        train_mode(self.network, False)
        try:
            cbs.on_eval_begin(run)
            cbs.on_eval_epoch_begin(run)
            feeder = open_feeder(source.one_pass(), source, self.device, None, sink=False)
            step = (
                CustomEvalStep(self.eval_network, metrics, self._eval_indexes)
                if self._custom_eval
                else EvalStep(self.eval_network, metrics, self.loss_fn)
            )
            loop = EvalLoop(step, feeder, state, run, cbs)
            first_step.watch(loop)
            with torch.no_grad():
                loop.run()
            state.metrics = {name: metric.eval() for name, metric in metrics.items()}
            cbs.on_eval_epoch_end(run)
            cbs.on_eval_end(run)
        finally:
            source.close()
            train_mode(self.network, was_training)
        return state.metrics

    def predict(self, *predict_data: Any) -> Any:
        """The network's output for ``predict_data`` (eval mode, no gradients)."""
        inputs = to_device(as_tensors(predict_data), self.device)
        was_training = self.network.training
        train_mode(self.network, False)
        try:
            with torch.no_grad():
                return self._predict_network(*inputs)
        finally:
            train_mode(self.network, was_training)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The training state in memory (nested, torch's names): ``network``, ``optimizer``,
        ``loss_scale_manager`` and ``lr_scheduler`` state dicts and, once the Model has
        trained (or loaded a position), where to resume: ``epoch`` (the whole epochs done),
        ``step_in_epoch``, ``cur_step_num``, ``dataset_state`` and ``rng_state``; see
        :func:`jisu.train.ckpt_resume.model_state`. ``jisu.save_checkpoint(model, path)``
        writes the same state as a MindSpore ``.ckpt``. Shares memory with the live tensors,
        as torch's state dicts do: save or copy it before training on."""
        return model_state(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load ``state`` (from :meth:`state_dict`; any of its keys may be missing): the
        weights, optimizer, loss scale and schedule now; with a position (``epoch``), the
        next ``train`` resumes after it, on the next batch, with the random generators'
        states restored as it starts; see :func:`jisu.train.ckpt_resume.load_model_state`."""
        load_model_state(self, state)
