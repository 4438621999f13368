"""Work the pipeline leaves to the device: offloaded op tails and device-side JPEG decode.

* :mod:`.offload` — which tail of a map's ops leaves the pipeline (``map(..., offload=True)``);
* :mod:`.decode_plan` — a decode op set to ``device("GPU")``: the pipeline draws the crop and
  flips from the JPEG header and ships packets (:mod:`jisu.dataset.core.packets`);
* :mod:`.decoder` — the device side: decodes a batch of packets (nvJPEG on CUDA);
* :mod:`.module` — ``dataset.offload_module()``: the ``torch.nn.Module`` that applies it all.
"""
