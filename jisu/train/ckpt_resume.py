"""A :class:`jisu.Model`'s training state in memory (``Model.state_dict()`` /
``Model.load_state_dict()``) and where a loaded one makes ``Model.train`` resume.

The state is nested, with torch's names: ``network``, ``optimizer``, ``loss_scale_manager``,
``lr_scheduler`` (state dicts) and the position: ``epoch`` (the whole epochs done, Keras'
``initial_epoch``: the 0-based index of the epoch a resumed run begins; N from the last step
of the N-th epoch on, N - 1 inside it), ``step_in_epoch`` (the steps done of that epoch: 0 at
an epoch's end), ``cur_step_num``, ``dataset_state`` (the data iterator's state after the
last batch) and ``rng_state`` (the global random generators' states). A checkpoint file holds
the same state (:mod:`jisu.train.ckpt_state`: the network and optimizer under MindSpore's
names, the rest in its resume entry).
"""

from __future__ import annotations

from typing import Any

from .checkpoint import capture_rng_state

#: the position keys of a state
POSITION = ("epoch", "step_in_epoch", "cur_step_num", "dataset_state", "rng_state")


def model_state(model: Any) -> dict[str, Any]:
    """``model``'s state (see the module). During training, the position is the step the
    callbacks are at (in sink mode the weights are those of a sink's last step: take it when
    ``cb_params.weights_current``, as ModelCheckpoint does; at an epoch's last step, take it
    at ``on_train_epoch_end``, as ModelCheckpoint does, so that it holds the epoch's
    learning-rate step too); after it, where it stopped; after a load, the loaded position
    (until training resumes). The random states are captured now.

    Tensors and plain values only, sharing memory with the live ones as torch's state dicts
    do: save or copy it before training on.
    """
    state: dict[str, Any] = {"network": model.network.state_dict()}
    if model._resume is not None:  # loaded and not yet resumed: that position
        state.update(model._resume)
    elif model._state is not None:
        epoch, step = model._state.resume_point()
        state.update(
            epoch=epoch,
            step_in_epoch=step,
            cur_step_num=model._state.cur_step_num,
            dataset_state=model._state.dataset_state,
            rng_state=capture_rng_state(),
        )
    if model.optimizer is not None:
        state["optimizer"] = model.optimizer.state_dict()
    if model.loss_scale_manager is not None:
        state["loss_scale_manager"] = model.loss_scale_manager.state_dict()
    if model._lr_schedule is not None:
        state["lr_scheduler"] = model._lr_schedule.state_dict()
    return state


def load_model_state(model: Any, state: dict[str, Any]) -> None:
    """Load ``state`` into ``model``: each of ``network``, ``optimizer``,
    ``loss_scale_manager``, ``lr_scheduler`` that it holds now; with a position (``epoch``),
    the next ``train`` resumes after it (``initial_epoch`` None, or the position's epoch), on
    the next batch, with the random generators' states (when present) restored as it starts.
    An older checkpoint that holds an epoch's end as the last step of the epoch (``epoch``
    N - 1, ``step_in_epoch`` the epoch's steps) resumes at epoch N, step 0 (the steps of an
    epoch are known when ``train`` starts)."""
    if "network" in state:
        model.network.load_state_dict(state["network"])
    if model.optimizer is not None and "optimizer" in state:
        model.optimizer.load_state_dict(state["optimizer"])
    if model.loss_scale_manager is not None and "loss_scale_manager" in state:
        model.loss_scale_manager.load_state_dict(state["loss_scale_manager"])
    if model._lr_schedule is not None and "lr_scheduler" in state:
        model._lr_schedule.load_state_dict(state["lr_scheduler"])
    if "epoch" in state:
        model._resume = {
            "epoch": int(state["epoch"]),
            "step_in_epoch": int(state.get("step_in_epoch", 0)),
            "cur_step_num": int(state.get("cur_step_num", 0)),
            "dataset_state": state.get("dataset_state"),
            "rng_state": state.get("rng_state"),
        }


def resume_at(
    resume: dict[str, Any], steps: int | None, initial_epoch: int | None, epochs: int
) -> tuple[dict, int]:
    """The loaded position ``resume`` as the run starts, and the epoch to start at.

    ``initial_epoch`` None takes the position's epoch. A position at an epoch's end counts
    the epoch as done: ``epoch`` N, ``step_in_epoch`` 0. Older checkpoints could hold the end
    of the N-th epoch as ``epoch`` N - 1 with ``step_in_epoch`` equal to the epoch's
    ``steps``: such a position is read as ``(N, 0)`` here, where the steps of an epoch are
    known (at load they are not), and ``initial_epoch`` may then be either number. Any other
    ``initial_epoch`` is refused.

    Raises:
        ValueError: ``initial_epoch`` disagrees with the position, ``epochs`` are already
            done at it, or the position is further into an epoch than ``steps`` (a checkpoint
            of another data set: the message names both numbers).
    """
    epoch, done = resume["epoch"], resume["step_in_epoch"]
    accepted = {epoch}
    if steps and done > steps:  # taken on another data set (or another sink_size)
        raise ValueError(
            f"Model.train: the loaded checkpoint was taken {done} steps into an epoch, but this "
            f"data set has {steps} steps per epoch (its batches, or sink_size in sink mode): "
            "the position does not fit it. Resume on the data set the checkpoint was taken "
            "with (same size, batch size and sink_size), or load it without its position "
            "(jisu.load_checkpoint(path, net=..., optimizer=...))"
        )
    if steps and done == steps:  # an epoch's end in the old numbering: the next epoch
        epoch, done = epoch + 1, 0
        accepted.add(epoch)
    if initial_epoch is not None and initial_epoch not in accepted:
        raise ValueError(
            f"Model.train: the loaded checkpoint resumes after {epoch} complete epoch(s) (at "
            f"epoch index {epoch}, step {done} of it), but initial_epoch={initial_epoch}; "
            f"pass initial_epoch={epoch}, or leave it at None"
        )
    if epoch >= epochs:
        raise ValueError(
            f"Model.train: the loaded checkpoint resumes after {epoch} complete epoch(s); "
            f"train to more than {epoch} epochs (received epoch={epochs})"
        )
    return dict(resume, epoch=epoch, step_in_epoch=done), epoch
