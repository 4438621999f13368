"""Worker processes for stages that ask for ``python_multiprocessing``.

:mod:`.pool` is the stage's pool (tasks, results, restarts), :mod:`.workers` the processes it
runs and their handshake, :mod:`.start` how they start (a forkserver that :mod:`.forkserver_boot`
prepares, so a worker imports only what its stage needs), :mod:`.worker` a worker's main loop;
results travel through shared memory (:mod:`.shm`, :mod:`.slab_pool`, :mod:`.shared_arrays`).
"""
